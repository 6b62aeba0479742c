"""The none-of-these decision (labels/none_of_these.py): its cues, the corpus's form statistics,
the rule in the caption-rule machinery, and the class-level pass share the rank stage reads."""

import pytest

from imagenot.labels.caption_rules import NONE_OF_THESE, CaptionRules, Sense, none_of_these_pairs, pair_rule
from imagenot.labels.none_of_these import (
    FEATURES,
    FormStats,
    NoneOfThese,
    Words,
    form_statistics,
    none_of_these_scores,
    pair_features,
)
from imagenot.labels.none_of_these_model import BIAS, WEIGHTS
from imagenot.pipeline.rank.pass_share import pass_shares
from imagenot.pipeline.rank.ranking import BELOW_THRESHOLD, LOW_PASS_SHARE, rank_synsets
from imagenot.pipeline.select.stage import read_form_stats

WORDS = Words(given_names=frozenset({"jacques"}), modifiers=frozenset({"orange"}))
PLAIN = NoneOfThese({}, 0.0, 0.5, WORDS)


def features(caption: str, word: str, lemmas=("apple",), model=PLAIN) -> dict[str, float]:
    start = caption.index(word)
    return pair_features(caption, start, start + len(word), lemmas, model)


def test_the_shipped_model_weighs_every_feature():
    assert set(WEIGHTS) == set(FEATURES) and isinstance(BIAS, float)


@pytest.mark.parametrize(
    ("caption", "word", "cue"),
    [
        ("a watch made by Cartier for the queen", "Cartier", "capitalised"),
        ("a portrait of Jacques Cartier at sea", "Cartier", "after_given_name"),
        ("a portrait of Jacques Cartier at sea", "Cartier", "in_title_run"),
        ("silk dress in poppy orange for summer", "poppy", "beside_modifier"),
        ("Pt. Reyes lighthouse at dusk", "Pt", "short"),
        ("corvette c7 for sale", "corvette", "beside_digits"),
        ("fresh apples from the NASA garden", "NASA", "all_capitals"),
    ],
)
def test_a_cue_fires_where_the_word_stands_so(caption, word, cue):
    assert features(caption, word)[cue] == 1.0


def test_no_cue_fires_on_a_plain_noun_in_plain_text():
    cues = features("a basket of red apples on the table", "apples")
    assert not any(cues[name] for name in ("capitalised", "in_title_run", "short", "beside_digits", "all_capitals"))
    assert cues["not_english"] == 0.0


def test_a_capital_in_a_title_case_caption_is_no_cue():
    assert features("Red Apple Basket On The Table", "Apple")["capitalised"] == 0.0


def test_form_statistics_count_each_forms_first_occurrence_and_its_cues():
    stats = form_statistics(
        ["a watch by Cartier today", "cartier watch 2019 model", "Cartier", None],
        [["cartier", "watch"], ["cartier", "watch"], ["cartier"], ["cartier"]],
    )
    assert stats["rows"] == {"cartier": 3, "watch": 2}
    assert stats["in_lower_case"] == {"cartier": 1, "watch": 2}  # a caption's first word is not mid-caption
    assert stats["capitalised"] == {"cartier": 1}
    assert stats["beside_digits"] == {"watch": 1}


def test_the_corpus_statistics_move_a_forms_feature_toward_its_own_rate():
    counts = {"rows": {"cartier": 100, "apple": 100}, "in_lower_case": {"cartier": 100, "apple": 100}}
    counts["capitalised"] = {"cartier": 95, "apple": 5}
    model = PLAIN.with_stats(FormStats(counts))
    caption = "cartier watch and apple pie"
    assert features(caption, "cartier", model=model)["corpus_capitalised"] > 0.8
    assert features(caption, "apple", model=model)["corpus_capitalised"] < 0.2
    unseen = features("a pear", "pear", model=model)["corpus_capitalised"]
    assert unseen == pytest.approx(0.5)  # a form never seen gets the corpus-wide rate


def test_the_decision_is_the_probability_at_the_threshold():
    model = NoneOfThese({"short": 6.0}, -3.0, 0.5, WORDS)
    [(p_letter, letter), (p_word, word)] = none_of_these_scores(
        [("Vitamin C tablets", 8, 9, ("C",)), ("apple tablets", 0, 5, ("apple",))], model
    )
    assert letter and p_letter > 0.9 and not word and p_word < 0.1


def test_the_rule_drops_through_the_caption_rule_machinery():
    model = NoneOfThese({"short": 6.0}, -3.0, 0.5, WORDS)
    rules = CaptionRules(enabled=frozenset({NONE_OF_THESE}), none_of_these=model)
    sense = Sense(("Z",), "noun.communication", False, frozenset({"z"}))
    assert pair_rule("Samsung Galaxy Z Flip", "z", sense, rules) == NONE_OF_THESE
    assert pair_rule("Samsung Galaxy Z Flip", "z", sense, CaptionRules(enabled=frozenset())) is None
    scores = none_of_these_pairs(["Samsung Galaxy Z Flip", "no such word"], ["z", "z"], [sense, sense], rules)
    assert scores[0][1] and scores[0][0] > 0.9 and scores[1] == (None, False)


def test_select_keeps_the_statistics_of_the_candidates_forms_only(index):
    apple = index.by_name("apple.n.01").wnid
    tally = {"form_stats": {"rows:apple": 3, "rows:apples": 2, "rows:pear": 7, "capitalised:apples": 1}}
    stats = read_form_stats(tally, [apple], index)
    assert stats.counts == {"rows": {"apple": 3, "apples": 2}, "capitalised": {"apples": 1}}


def test_pass_share_is_the_rules_share_times_the_sense_share():
    shares = pass_shares({"n1": 10, "n2": 4, "n3": 0}, {"n1": 8, "n2": 4}, {"n1": 0.5})
    assert shares == {"n1": 0.4, "n2": 1.0}


def test_a_candidate_under_the_pass_share_floor_is_no_class():
    scores = {"n1": [0.9], "n2": [0.8], "n3": [0.1]}
    ranking = rank_synsets(scores, 1, 0.5, 3, pass_shares={"n1": 0.2, "n2": 0.9, "n3": 0.9}, min_pass_share=0.5)
    assert ranking.classes == ("n2",)
    assert ranking.dropped == {"n1": LOW_PASS_SHARE, "n3": BELOW_THRESHOLD}


def _run_with_ranking(folder, index, rows):
    """A run folder with what `imagenot why` reads of select and rank: fates and a ranking."""
    from imagenot.filters.funnel import FATE_COLUMNS

    (folder / "select").mkdir(parents=True)
    (folder / "rank").mkdir()
    fates = ["\t".join(FATE_COLUMNS)]
    ranking = ["wnid\tname\tscore\tfate\tpass_share"]
    for name, fate, share in rows:
        wnid = index.by_name(name).wnid
        fates.append(f"{wnid}\t{name}\tkept\tcandidate\t\t20 single-synset captions")
        ranking.append(f"{wnid}\t{name}\t0.6\t{fate}\t{share}")
    (folder / "select" / "synset_fates.tsv").write_text("\n".join(fates) + "\n")
    (folder / "rank" / "ranking.tsv").write_text("\n".join(ranking) + "\n")
    (folder / "config.yaml").write_text("ranking:\n  min_pass_share: 0.5\n")
    return folder


def test_why_prints_a_candidates_pass_share(tmp_path, index):
    from cli_runner import invoke

    from imagenot.pipeline.commands.why import why

    run = _run_with_ranking(
        tmp_path, index, [("corvette.n.01", LOW_PASS_SHARE, 0.2), ("gavel.n.01", "beyond_top_k", 0.9)]
    )
    low = invoke(why, ["corvette.n.01", "--run", str(run)])
    assert low.exit_code == 0, low.output
    assert "dropped at step 'rank' (low_pass_share): 20% of its captions pass" in low.output
    assert "under the 50% a class needs (ranking.min_pass_share)" in low.output
    passed = invoke(why, ["gavel.n.01", "--run", str(run)]).output
    assert "90% of its captions pass the caption rules and the sense decision (a class needs 50%" in passed
