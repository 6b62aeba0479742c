"""The review server's pages: Jinja templates (autoescaped: a rater's name or a caption is text,
never markup) with their CSS and a few lines of plain JavaScript inline, so a page needs no build
step and loads nothing from the network. Without JavaScript the radio buttons and the submit
button still work with a mouse."""

from __future__ import annotations

CLASS_INSTRUCTIONS = (
    "Does each image show the class named above (its gloss says which sense is meant)? "
    "Answer yes if you are sure it does, no if you are sure it does not, unsure otherwise. "
    "A drawing, a product photo or a part of the thing counts when the thing itself is clearly shown."
)
FLAGGED_INSTRUCTIONS = (
    "An automatic check doubts this image's label. Compare it with the examples of its given class and of "
    "the suggested class: which class does the image show? Both, or neither, are answers too."
)
CANDIDATE_INSTRUCTIONS = (
    "Should this WordNet sense be a class of the dataset? Its images will be those whose captions name it: "
    "read its gloss and the captions below. Keep it when most captions use the word in this sense and the thing "
    "can be photographed; drop it when they mostly mean something else (a brand, a name, another sense of the "
    "word) or nothing a picture can show; unsure otherwise."
)
CANDIDATE_KEYS = (
    "Keys: y keep, n drop, u unsure, Enter sends and moves on. The mouse works too. "
    "Opening a class again shows your answer, and a new one replaces it."
)
# Each answer's key, shown on its button and read by the script (a page's `data-keys`).
KEY_OF = {
    "yes": "y",
    "no": "n",
    "unsure": "u",
    "keep": "y",
    "drop": "n",
    "given": "g",
    "suggested": "s",
    "both": "b",
    "neither": "n",
}
KEYS = "Keys: arrows or h j k l move, y yes, n no, u unsure, Enter sends the page. The mouse works too."
FLAGGED_KEYS = "Keys: g given, s suggested, b both, n neither, Enter sends the page. The mouse works too."

STYLE = """
body{font-family:system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:0 1em;color:#222}
header{display:flex;justify-content:space-between;align-items:baseline;border-bottom:1px solid #ccc}
.gloss{font-size:1.1em}.path{color:#666;font-size:.85em}.instructions{background:#f4f4f0;padding:.6em .8em}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(200px,1fr));gap:10px}
.item{border:3px solid transparent;padding:4px;border-radius:6px;background:#fafafa}
.item.current{border-color:#1a66d9}.item img{width:100%;height:170px;object-fit:contain;background:#eee}
.item label{margin-right:.4em;cursor:pointer;white-space:nowrap;font-size:.9em}\
.item.yes{background:#e3f5e3}.item.no{background:#fbe3e3}
.item.unsure{background:#f7f2d8}.item.keep{background:#e3f5e3}.item.drop{background:#fbe3e3}
.captions li{margin:.2em 0}.captions .dropped{color:#999}.figures{color:#444}
.caption{font-size:.8em;color:#555}.examples{display:flex;gap:6px;flex-wrap:wrap}
.examples img{width:120px;height:120px;object-fit:contain;background:#eee}
.flagged{display:grid;grid-template-columns:1fr 1fr 1fr;gap:1em}\
.flagged .target img{width:100%;max-height:360px;object-fit:contain}
button{font-size:1.1em;padding:.4em 1.2em;margin:1em 0}
.item label{display:inline-block;padding:.25em .5em;border:1px solid #bbb;border-radius:5px;margin:.2em .3em .2em 0}
.item label kbd{font-size:.85em;color:#555}
.notice{color:#a33;font-weight:600;margin:.3em 0}.notice:empty{margin:0}
.sendbar{position:sticky;bottom:0;background:#fff;z-index:3;border-top:1px solid #ddd;display:flex;gap:1em;\
align-items:center;flex-wrap:wrap}.sendbar button{margin:.5em 0}
.placeholders{background:#fff4e5;border-left:4px solid #f0a020;padding:.4em .8em;margin:.5em 0}
.classbar{position:sticky;top:0;background:#fff;z-index:3;border-bottom:1px solid #ddd;padding:.2em 0}
.classbar h2{margin:.2em 0}.classbar .gloss{margin:.2em 0}
.candidate{display:grid;grid-template-columns:minmax(0,1fr) 330px;gap:1.5em;align-items:start}
.candidate .answer{position:sticky;top:.5em;background:#f7f7f7;padding:.6em .8em;border-radius:6px}
.candidate .answer .item{background:none;padding:0}.candidate .answer label{display:block;font-size:1.1em}
.captions{margin:.3em 0;padding-left:1.6em}.examples .thumb{border:0;padding:0;margin:0;background:none;cursor:zoom-in}
.examples .thumb img{width:150px;height:150px;object-fit:contain;background:#eee;transition:transform .1s}
.examples .thumb:hover img,.examples .thumb:focus img,.examples .thumb.big img{transform:scale(2.2);position:relative;\
z-index:5;box-shadow:0 2px 10px #0006}
.narrow{display:none}
@media (max-width:800px){.flagged{grid-template-columns:1fr}\
.candidate{grid-template-columns:1fr}.candidate .answer{position:sticky;bottom:0;top:auto}\
.examples .thumb img{width:100px;height:100px}.answer .instructions,.answer .keys{display:none}\
.narrow{display:block}.candidate .answer label{display:inline-block}.candidate .answer button{margin:.4em 0}}
"""

SCRIPT = """
const form = document.getElementById('answers');
const items = [...document.querySelectorAll('.item')];
const keys = JSON.parse(form.dataset.keys);
let at = 0;
function show(i) {
  at = Math.max(0, Math.min(items.length - 1, i));
  items.forEach((e, j) => e.classList.toggle('current', j === at));
  items[at].scrollIntoView({block: 'nearest'});
}
function columns() {
  const top = items[0].offsetTop; let n = 0;
  for (const e of items) { if (e.offsetTop !== top) break; n++; }
  return Math.max(n, 1);
}
function mark(item) {
  const chosen = item.querySelector('input:checked');
  item.classList.remove('yes', 'no', 'unsure', 'keep', 'drop');
  if (chosen && ['yes', 'no', 'unsure', 'keep', 'drop'].includes(chosen.value)) item.classList.add(chosen.value);
}
const notice = document.getElementById('notice');
const counter = document.getElementById('answered');
const answered = () => items.filter(item => item.querySelector('input:checked')).length;
const count = () => { if (counter) counter.textContent = answered(); };
items.forEach((item, i) => {
  item.addEventListener('click', () => show(i));
  item.querySelectorAll('input').forEach(input => input.addEventListener('change', () => { mark(item); count(); }));
  mark(item);
});
document.querySelectorAll('.thumb').forEach(b => b.addEventListener('click', () => b.classList.toggle('big')));
let warned = false;
function say(text) {  // the notice sits in a bar that stays on screen; brought into view where it does not
  notice.textContent = text;
  notice.scrollIntoView({block: 'nearest'});
}
form.addEventListener('submit', event => {  // nothing sent without a word: an empty or a partly answered page
  const n = answered();
  if (n === 0) {
    event.preventDefault();
    say(items.length > 1 ? 'No image has an answer yet: choose one per image first.'
      : 'Choose an answer first (the keys are on the buttons).');
  } else if (n < items.length && !warned) {
    event.preventDefault(); warned = true;
    show(items.findIndex(item => !item.querySelector('input:checked')));  // the first one without an answer
    say(`${items.length - n} of ${items.length} images have no answer yet: they come back to you after your ` +
      'other pages. Enter (or the button) again sends the page as it is.');
  }
});
count();
document.addEventListener('keydown', event => {
  if (event.altKey || event.ctrlKey || event.metaKey) return;
  const moves = {ArrowLeft: -1, h: -1, ArrowRight: 1, l: 1, \
ArrowUp: -columns(), k: -columns(), ArrowDown: columns(), j: columns()};
  if (event.key in moves) { show(at + moves[event.key]); event.preventDefault(); return; }
  if (event.key in keys) {
    const input = items[at].querySelector(`input[value="${keys[event.key]}"]`);
    input.checked = true; mark(items[at]); count();
    if (items.length > 1) show(at + 1);
    event.preventDefault(); return;
  }
  // Enter sends the page, but on a link or a button it does what it does there (follow it, press it)
  if (event.key === 'Enter' && !event.target.closest('a, button')) { event.preventDefault(); form.requestSubmit(); }
});
show(0);
"""

LAYOUT = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>{{ title }} · imagenot review</title>
<style>{{ style }}</style></head><body>
<header><h1>imagenot review</h1>{% if rater %}<p>Rater <b id="rater">{{ rater }}</b>
{% if progress %} · <span id="left">{{ progress.left_for_you }}</span> {{ unit }} left for you
· {{ progress.answers_wanted }} answers still wanted in all · {{ progress.given }} answered
{% if progress.per_minute %} · your pace {{ '%.1f' % progress.per_minute }} {{ unit }}/min{% endif %}{% endif %}\
</p>{% endif %}</header>
{% if placeholders %}<p class="placeholders" id="placeholders">{{ placeholders }}</p>{% endif %}
{{ body | safe }}</body></html>"""
# A demo run's images are the demo server's pictures of their captions (pipeline/demo): said on every page.
PLACEHOLDERS = (
    "A demo run: its images are placeholders, not photos. Each one shows the words of its caption on a plain "
    "picture, so its caption is in view whatever the review's settings say; answer from those words."
)

NAME_FORM = """<h2>Who is rating?</h2>
<p>Give your name once: your answers are stored under it, and you are not shown any of the {{ unit }} twice.</p>
<form method="post" action="/rater" id="sign-in"><label>Your name <input type="text" name="name" \
maxlength="{{ max_name }}" required autofocus></label><input type="hidden" name="then" value="{{ then }}">
<button type="submit">Start</button></form>"""

DONE = """<h2>Nothing left for you</h2><p>Every image has its answers, or you answered every image still waiting.
Thank you. The answers are saved; the review's owner runs <code>imagenot review export</code>.</p>"""

CLASSES_DONE = """<h2>Nothing left for you</h2><p>Every class has its answers, or you answered every class still
waiting. Thank you. The answers are saved; the review's owner runs <code>imagenot review classes apply</code>.</p>"""

CLASS_PAGE = """<div class="classbar"><h2><span id="class">{{ c.name }}</span> <small>({{ c.lemmas }})</small>
<small class="count"><span id="answered">0</span> of {{ questions | length }} answered</small></h2>\
<p class="gloss">{{ c.gloss }}</p></div>
<p class="path">WordNet: {{ c.path | join(' › ') }}</p><p class="instructions">{{ instructions }}<br>{{ keys_help }}</p>
<form id="answers" method="post" action="/task/{{ task.id }}" data-keys='{"y": "yes", "n": "no", "u": "unsure"}'>
<div class="grid">{% for q in questions %}{% set image = 'image %d of %d' % (loop.index, questions | length) %}\
<div class="item" data-image="{{ q.image }}" tabindex="-1"><img src="/image/{{ q.image }}" alt="{{ image }}">
{% if show_captions %}<div class="caption">{{ q.caption }}</div>{% endif %}
{% for answer in task.answers %}\
<label><input type="radio" name="a-{{ q.image }}" value="{{ answer }}"\
 aria-label="{{ answer }}, {{ image }}">{{ answer }} <kbd>[{{ key_of[answer] }}]</kbd></label>{% endfor %}
</div>{% endfor %}</div><div class="sendbar"><button type="submit">Send this page [Enter]</button>\
<p class="notice" id="notice" role="status"></p></div></form>\
<script>{{ script | safe }}</script>"""

FLAGGED_PAGE = """<h2>Which class does this image show?</h2>\
<p class="instructions">{{ instructions }}<br>{{ keys_help }}</p>
<form id="answers" method="post" action="/task/{{ task.id }}"
 data-keys='{"g": "given", "s": "suggested", "b": "both", "n": "neither"}'>
<div class="flagged"><div><h3>Given: <span id="given">{{ given.name }}</span></h3>\
<p class="gloss">{{ given.gloss }}</p>
<div class="examples">{% for e in given_examples %}\
<img src="/image/{{ e }}" alt="example of the given class">{% endfor %}</div></div>
{% for q in questions %}<div class="item target" data-image="{{ q.image }}">\
<img src="/image/{{ q.image }}" alt="the image asked about">
{% if show_captions %}<div class="caption">{{ q.caption }}</div>{% endif %}
{% for answer in task.answers %}\
<label><input type="radio" name="a-{{ q.image }}" value="{{ answer }}" aria-label="{{ answer }}, the image asked \
about">{{ answer }} <kbd>[{{ key_of[answer] }}]</kbd></label>{% endfor %}
</div>{% endfor %}
<div><h3>Suggested: <span id="suggested">{{ suggested.name }}</span></h3><p class="gloss">{{ suggested.gloss }}</p>
<div class="examples">{% for e in suggested_examples %}\
<img src="/image/{{ e }}" alt="example of the suggested class">{% endfor %}</div></div>
</div><div class="sendbar"><button type="submit">Send [Enter]</button>\
<p class="notice" id="notice" role="status"></p></div></form>\
<script>{{ script | safe }}</script>"""

CANDIDATE_PAGE = """<div class="candidate"><div class="evidence">\
<h2><span id="class">{{ c.name }}</span> <small>({{ c.lemmas }})</small></h2>\
<p class="gloss">{{ c.gloss }}</p>
<p class="path">WordNet: {{ c.path | join(' › ') }}</p>
<h3>Captions that name it</h3><ol class="captions">{% for caption in c.captions %}\
<li class="{{ 'dropped' if caption.passes is sameas false else 'kept' }}">{{ caption.caption }}\
{% if caption.passes is sameas false %} <small>(another sense fits it better: not used)</small>{% endif %}</li>\
{% endfor %}</ol>
{% if c.thumbnails %}<h3>Its images <small>(point at one, or click it, to enlarge)</small></h3><div class="examples">\
{% for image in c.thumbnails %}<button type="button" class="thumb" aria-label="enlarge image {{ loop.index }}">\
<img src="/image/{{ image }}" alt="image {{ loop.index }} of the class"></button>{% endfor %}</div>{% endif %}
<p class="instructions narrow">{{ instructions }}</p>
<p class="figures">{{ c.standing }} · \
{% if c.pass_share is not none %}<span id="share">{{ '%.0f' % (100 * c.pass_share) }}%</span> of its captions \
use the word in this sense (estimated){% else %}no estimate of the share of its captions used in this sense\
{% endif %}</p>
</div>
<form id="answers" class="answer" method="post" action="/class/{{ c.wnid }}"
 data-keys='{"y": "keep", "n": "drop", "u": "unsure"}'>
<p class="instructions">{{ instructions }}</p><p class="keys">{{ keys_help }}</p>
{% if chosen %}<p class="chosen" id="chosen">Your answer: <b>{{ chosen }}</b>. Choose again to change it.</p>{% endif %}
<fieldset class="item" data-image="{{ c.wnid }}"><legend>Keep {{ c.name }} as a class?</legend>\
{% for answer in answers %}<label><input type="radio" name="a-{{ c.wnid }}" value="{{ answer }}"\
{% if answer == chosen %} checked{% endif %}>{{ answer }} <kbd>[{{ key_of[answer] }}]</kbd></label>{% endfor %}\
</fieldset><p class="notice" id="notice" role="status"></p>
<button type="submit">Send and go on [Enter]</button>
{% if previous %}<p class="previous"><a href="/class/{{ previous }}" id="previous">\
Change your answer to the last class</a></p>{% endif %}\
</form></div>
<script>{{ script | safe }}</script>"""
