"""What every drop reason in the funnel means: one sentence per reason, for the card and report.

Synset reasons say why a synset stopped being a candidate; caption reasons why a row (a caption,
an image) left; `below_threshold` is both (rank and sample). `tests/test_report.py` checks that
every reason a build reports is defined here.
"""

from __future__ import annotations

from collections.abc import Iterable

from imagenot.filters.person_synsets import ANY_PERSON, IDENTITY_LABELS
from imagenot.labels.instances import REASON

SYNSET_REASONS = {
    "reference_synset": "the synset is in the reference class set (step 2)",
    "shares_lemma": "the synset shares a lemma (case-insensitively) with a reference synset (step 2)",
    "descendant_of_reference": "strict reading: the synset descends from a reference synset (step 2)",
    "ancestor_of_reference": "strict reading: the synset is an ancestor of a reference synset (step 2)",
    "not_in_reference": "within reading: the synset is not in the reference class set (step 2)",
    "too_few_captions": "fewer usable captions than `selection.min_captions` (step 3), or at rank fewer than "
    "a class needs (`ranking.min_captions`, by default `sampling.images_per_class`)",
    "has_candidate_descendant": "another candidate descends from the synset, so it is not a leaf (step 4)",
    "wordnet_usage_ethnic_slur": "WordNet files the synset under the usage domain ethnic slur "
    "(`selection.offensive_synsets`)",
    "wordnet_usage_disparagement": "WordNet files the synset under the usage domain disparagement "
    "(`selection.offensive_synsets`)",
    "wordnet_usage_obscenity": "WordNet files the synset under the usage domain obscenity, or vulgarism "
    "(`selection.offensive_synsets`)",
    "gloss_offensive_term": "the synset's WordNet gloss calls it an offensive, derogatory, disparaging, contemptuous, "
    "pejorative (or the like) term, name or word, or a slur (`selection.offensive_synsets`)",
    **{
        reason: f"a person synset that names people by {label}: an identity root of the README or below one "
        "(`selection.person_synsets`)"
        for reason, label in IDENTITY_LABELS.items()
    },
    ANY_PERSON: "a person synset (WordNet's noun.person), dropped because `selection.person_synsets` is all",
    REASON: "the synset is a WordNet instance: one named person, place, work or event, not a class of things "
    "(`selection.instance_synsets`)",
    "nsfw_text": "alt-profanity-check flags the synset's lemmas and gloss (step 5)",
    "no_single_synset_caption": "no caption names the synset as its only candidate (step 6)",
    "not_picturable": "the synset descends from none of `selection.picturable_roots`: not a thing an image shows",
    "a_place": "the synset is a place (a lexicographer file in `selection.picturable_excluded_lexnames`)",
    "no_caption_passes_rules": "a caption rule (`selection.caption_rules`) dropped each of its single-synset captions",
    "no_captions": "no caption of the synset was scored at the rank step",
    "below_threshold": "rank: the mean gloss similarity of the synset's top captions is below "
    "`ranking.thresholds`; sample: the caption's similarity is below `sampling.threshold`",
    "beyond_top_k": "the synset passed every filter but ranked after the best `ranking.classes`",
    "low_pass_share": "rank: under `ranking.min_pass_share` of the synset's captions pass the caption rules and the "
    "sense decision: its word mostly names something else",
    "vetoed": "rank: people dropped it from the class list (`imagenot review classes apply`, `ranking.vetoed`)",
}
CAPTION_REASONS = {
    "below_threshold": SYNSET_REASONS["below_threshold"],
    "line_malformed": "a line of a text corpus file does not parse (a field missing or extra, an unterminated quote, "
    "a value that is not a number where one is expected); the tag stage's tally names the first lines by file and line",
    "caption_missing": "the corpus row has no caption",
    "caption_empty": "the caption is empty or only whitespace",
    "caption_not_text": "the caption has no letter or digit",
    "url_missing": "the corpus row has no URL",
    "url_not_http": "the URL is not http(s) (at download: img2dataset was not given it, or a redirect left http)",
    "no_noun_lemma": "no WordNet noun lemma occurs in the caption (step 1)",
    "nsfw_tag_missing": "the row has no LAION NSFW tag and `selection.keep_unrated` is false",
    "nsfw_tag": "the row's LAION NSFW tag is not in `selection.allowed_nsfw_tags`",
    "punsafe_missing": "the row has no punsafe score and `selection.keep_unrated` is false",
    "punsafe_high": "the row's punsafe score is above `selection.max_punsafe`",
    "no_candidate_left": "the step removed the last candidate synset the caption names",
    "several_candidates": "the caption names two or more candidate synsets (step 6)",
    "size_code": 'caption rule: the word is a size or Roman-numeral code in capitals ("XL", "LX")',
    "number": "caption rule: a number synset, or a match holding a digit (model names, sizes, dates, counts)",
    "foreign_word": "caption rule: the word is a function word of another language "
    "(`selection.caption_rules.foreign_words`)",
    "case": 'caption rule: an abbreviation that matches the lemma only by case folding ("Led" for LED, "HP" for hp)',
    "name": "caption rule: the word is part of a personal name (next to a given name, or one itself)",
    "title": "caption rule: the caption names a work (a year in brackets, by and a name, ebook, DVD ...)",
    "part_of_speech": "caption rule: the caption uses the word as a verb, adjective or adverb",
    "rare_sense": "caption rule: WordNet's tagged counts give the word a commoner noun sense than the synset",
    "none_of_these": "caption rule: a fitted model says the word names none of its noun senses there (a name, a "
    "sense WordNet lacks, a letter or abbreviation, a modifier), at `selection.caption_rules.none_of_these_threshold`",
    "none_of_these_fit": "the sense model says the word names none of its noun senses where it stands: the best "
    "sense's fit is under `scoring.none_of_these_fit` for the sense method (beside the none_of_these caption rule)",
    "other_sense": "another noun sense of the caption's word fits the caption better than the class's sense, or not "
    "`scoring.sense_margin` worse (sense contrast); the card names the winning senses",
    "web_sense": "a sense WordNet 3.0 lacks (`labels/web_senses.tsv`: desktop wallpaper, a stock photo, a brand the "
    "word names) fits the caption better than the class's sense, or not `scoring.web_sense_margin` worse",
    "label_model": "the label model (`scoring.label_model`, learned from captions read by hand) says the caption's "
    "picture is unlikely to show the class (probability under `scoring.label_floor`); the card and `imagenot why` "
    "name what it says the word is there: a modifier of another noun, a name, a sense WordNet lacks, not shown...",
    "duplicate_url": "another caption of the class has the same URL; its best one stays",
    "duplicate_caption": "another caption of the class has the same text; its best one stays",
    "url_in_other_class": "the URL is also listed by another class, where its gloss similarity is higher (ties: "
    "the lower class index)",
    "beyond_first_phase": "a class caption the encoder did not score: the static first phase kept it out, "
    "or the priority path settled the class's list without it (see the scoring path)",
    "not_listed": "the class filled its images and reserve before reaching the caption in its sampling order",
    "reserve": "kept in the class's reserve, to replace images that fail to download or audits drop",
    "redirect_loop": "the URL redirects in a loop or too often",
    "too_large": "the response is larger than `download.max_response_bytes`",
    "too_many_pixels": "the image has more pixels than `download.max_image_pixels`",
    "truncated": "the response ended before the image did",
    "not_an_image": "the response is not an image that decodes",
    "timeout": "the server stalled for longer than `download.timeout_s`",
    "http_404": "the server answered 404 Not Found",
    "http_4xx": "the server answered another 4xx error",
    "http_5xx": "the server answered a 5xx error",
    "disallowed": "the image's X-Robots-Tag header names a directive of `download.disallowed_header_directives` "
    "(noai, noimageai, ...); its bytes were not kept",
    "tdmrep": "the site reserves text-and-data-mining rights (TDMRep: its /.well-known/tdmrep.json, so the image was "
    "never requested, or the image's tdm-reservation header, so its bytes were not kept; `download.tdmrep`)",
    "content_usage": "the site declines AI training (IETF AI Preferences `Content-Usage`, in its robots.txt, so the "
    "image was never requested, or in the image's response header, so its bytes were not kept; "
    "`download.ai_preferences`)",
    "content_signal": "the site's robots.txt says `Content-Signal: ai-train=no` for the URL, so it was never requested "
    "(`download.content_signal`)",
    "address_refused": "the URL's host resolves to an address outside public networks and `download.allowed_networks`",
    "host_given_up": "the host failed `download.host_max_failures` times in a row or asked to wait longer than "
    "`download.max_backoff_s`, so the round gave it up",
    "robots_txt": "the host's robots.txt disallows the URL for the crawler (`download.robots_txt`)",
    "robots_unreachable": "the host's robots.txt answered 429 or 5xx or not at all, "
    "so everything on it counts as disallowed",
    "throttled": "the server answered the last attempt with 429 (too many requests) or 503 (unavailable)",
    "unreachable": "no connection: refused, reset, no such host, no route, or a TLS failure",
    "blocklist_url": "a `download.blocklists` file names the URL",
    "blocklist_domain": "a `download.blocklists` file names the URL's domain (or a redirect's)",
    "blocklist_sha256": "a `download.blocklists` file names the image's sha256",
    "blocklist_md5": "a `download.blocklists` file names the image's md5",
    "review_rejected": "people reviewing the labels rejected the image: too few of their yes/no answers said it "
    "shows its class (`imagenot review apply --min-selection`)",
    "other": "any other download failure (img2dataset's message is in its round's parquet)",
}


def defined(reason: str) -> bool:
    return reason in SYNSET_REASONS or reason in CAPTION_REASONS


def glossary_rows(reasons: Iterable[str]) -> list[tuple[str, str]]:
    """(reason, meaning) for each reason given, in the glossary's order; an unknown reason says so."""
    wanted = set(reasons)
    known = {**SYNSET_REASONS, **CAPTION_REASONS}  # below_threshold: one entry
    rows = [(reason, meaning) for reason, meaning in known.items() if reason in wanted]
    return rows + [(reason, "(not defined in pipeline/report/glossary.py)") for reason in sorted(wanted - known.keys())]
