"""The run folder's layout: the names of what one stage writes and another stage, the report, an
audit or the export reads, and where a run's dataset lies.

    RUN/config.yaml, summary.json       the resolved config, each stage's figures
    RUN/corpus_ground_truth.parquet     a synthetic corpus's ground truth, beside RUN/corpus/
                                        (pipeline/corpus/synth.py)
    RUN/vetoed_classes.txt              the classes people vetoed (`review classes apply`)
    RUN/imagenot.lock                   the run's lock (pipeline/run/lock.py)
    RUN/journal.json                    what each command that rewrote the run set out to do, and
                                        whether it finished (pipeline/run/journal.py)
    RUN/<stage>/                        one folder per stage (fingerprint.json, figures.json, DONE:
                                        pipeline/run/stage_dir.py), holding the files named below
    RUN/audit/<audit>/                  the audits' folders
    RUN/dataset/                        the export: the one folder a user trains on

A module that reads another stage's outputs takes their names from here rather than from that
stage's module. A stage's private bookkeeping (tallies, cut-offs, per-class tables) stays named in
its own module.
"""

from __future__ import annotations

from imagenot.errors import ImagenotError
from imagenot.labels.caption_rules import PairScores
from imagenot.pipeline.run.files import read_bytes, read_json, stage_shards
from imagenot.pipeline.run.filesystems import FileSystems

# Stage folders, in the order `imagenot build` runs them.
CORPUS = "corpus"
TAG = "tag"
SELECT = "select"
SCORE = "score"
RANK = "rank"
SAMPLE = "sample"
DOWNLOAD = "download"
REPORT = "report"
EXPORT = "export"
# Audit folders.
AUDIT_EMBEDDINGS = "audit/embeddings"
AUDIT_DUPLICATES = "audit/duplicates"
AUDIT_AGREEMENT = "audit/agreement"
AUDIT_LABEL_NOISE = "audit/label_noise"
AUDIT_RANKINGS = "audit/rankings"
REVIEW = "review"  # human review (`imagenot review`): not a stage, its files change as raters answer

# Every stage's folder (pipeline/run/stage_dir.py)
FINGERPRINT_FILE = "fingerprint.json"  # the settings and upstream the stage ran with
FIGURES_FILE = "figures.json"  # its accounting, for the run's summary
DONE_FILE = "DONE"  # written last: the stage finished
# corpus/
CORPUS_PARTS = "part-*.parquet"  # the synthetic corpus's shards
# tag/
TAGGED_DIR = "tagged"  # the corpus rows with their synsets
TAG_TALLY_FILE = "tag_tally.json"  # rows read, dropped and tagged
CORPUS_SHARDS_FILE = "shards.json"  # [path, size, mtime] of each corpus shard read (in the run: from it)
# select/
SELECTED_DIR = "selected"  # the captions kept, with their synset
SELECT_TALLY_FILE = "select_tally.json"  # "kept": captions kept per synset
FUNNEL_FILE = "funnel.json"
SYNSET_FATES_FILE = "synset_fates.tsv"  # every found synset and the step that decided it
# score/
FIRST_PASS_DIR = "first_pass"  # each candidate synset's first-pass captions, scored
# rank/
CLASSES_FILE = "classes.json"  # the classes: index, wnid, name, lemmas, gloss, captions, score, rank
CLASS_LIST_FILE = "class_list.tsv"  # the same as a table
RANKING_FILE = "ranking.tsv"  # every scored candidate with its score and fate
SCORED_DIR = "scored"  # the classes' captions, scored
# sample/ and download/
DATASET_DIR = "dataset"  # one row per image of the dataset
RESERVE_DIR = "reserve"  # sample/: the images that replace those that fail or are dropped
MANIFEST_FILE = "manifest.json"  # sample/
# The sample stage's counts of each class's candidates by fate (summary.json, class_sampling.tsv):
# candidates = none_of_these_fit + other_sense + web_sense + label_model + below_threshold + duplicate_url +
# duplicate_caption + url_in_other_class + images + reserve + not_listed
SAMPLE_COUNTS = (
    "candidates",
    "none_of_these_fit",
    "other_sense",
    "web_sense",
    "label_model",
    "below_threshold",
    "duplicate_url",
    "duplicate_caption",
    "url_in_other_class",
    "not_listed",
)
# report/
CARD_FILE = "card.md"
PAGE_FILE = "report.html"
REMOVED_SYNSETS_FILE = "removed_synsets.tsv"  # the synsets the safety rules removed, with their reasons
# audit/: the outputs another audit or the report reads
CLASS_QUERIES_FILE = "class_queries.parquet"  # audit/embeddings/: each class's query, embedded (agreement reads it)
DUPLICATE_PAIRS_HTML_FILE = "pairs.html"  # audit/duplicates/
AGREEMENT_PLOT_FILE = "similarity.png"  # audit/agreement/
LABEL_NOISE_FILE = "summary.json"  # audit/label_noise/
MODEL_RANKINGS_FILE = "rankings.json"  # audit/rankings/, when `compare-rankings --out` puts it there
MODEL_RANKINGS_PLOT_FILE = "rankings.png"
# review/
REVIEW_PLAN_FILE = "plan.parquet"  # the images raters see, by page
REVIEW_DB_FILE = "answers.sqlite"  # the answers as given (a local run's; a bucket run's is a copy)
REVIEW_ANSWERS_FILE = "answers.parquet"  # `review export`: every answer
REVIEW_IMAGES_FILE = "images.parquet"  # `review export`: per image, its answers aggregated
REVIEW_RESULTS_FILE = "results.json"  # `review export`: precision per class, rater accuracies (the card reads it)
REVIEW_PLOT_FILE = "precision.png"  # per-class precision with its interval, sorted
# RUN/
RUN_CONFIG = "config.yaml"  # the resolved config the run's stages ran with
SUMMARY_FILE = "summary.json"  # each stage's figures (pipeline/run/summary.py)
LOCK_FILE = "imagenot.lock"  # held by the command working on the run (pipeline/run/lock.py)
JOURNAL_FILE = "journal.json"  # the commands that rewrote the run, the last one maybe unfinished (run/journal.py)
VETOES_FILE = "vetoed_classes.txt"  # `review classes apply`'s vetoes: `wnid name` a line; every build's rank reads it
EXPORT_DIR = "dataset"  # the export's folder, beside the stage folders

SCORE_COLUMN = "gloss_similarity"  # a caption's similarity to its synset's gloss (`similarity` is LAION's CLIP score)
OTHER_SENSE_COLUMN = "other_sense"  # the best other noun sense of the caption's word (sense contrast)
MARGIN_COLUMN = "sense_margin"  # the caption's sense score for its synset minus the other sense's
FIT_COLUMN = "sense_fit"  # the best sense's score without the prior (how well the word fits any sense)
WEB_SENSE_COLUMN = "web_sense"  # the best of the word's senses WordNet lacks (labels.web_senses)
WEB_MARGIN_COLUMN = "web_margin"  # the caption's sense score for its synset minus that web sense's
LABEL_COLUMN = "label_score"  # the label model's probability that the caption's picture shows its class
LABEL_USE_COLUMN = "label_use"  # what the label model says the word is there (labels.label_model.USES)
SENSE_COLUMNS = (
    OTHER_SENSE_COLUMN,
    MARGIN_COLUMN,
    FIT_COLUMN,
    WEB_SENSE_COLUMN,
    WEB_MARGIN_COLUMN,
    LABEL_COLUMN,
    LABEL_USE_COLUMN,
)
_DECIDED_BY = {"margin": MARGIN_COLUMN, "fit": FIT_COLUMN, "web_margin": WEB_MARGIN_COLUMN, "label": LABEL_COLUMN}


def pair_scores(rows) -> PairScores:
    """The score stage's columns of `rows` (a table or a batch), as the label decision reads them;
    a column the score stage did not write (no sense contrast, no label model) is None."""
    names = rows.schema.names
    found = {field: rows.column(column).to_numpy() for field, column in _DECIDED_BY.items() if column in names}
    return PairScores(rows.column(SCORE_COLUMN).to_numpy(), **found)


def stage_path(run_dir: str, stage: str, *parts: str) -> str:
    """A stage's folder in the run, or a path under it."""
    return FileSystems.join(run_dir, stage, *parts)


def classes_path(run_dir: str) -> str:
    return stage_path(run_dir, RANK, CLASSES_FILE)


def read_classes(run_dir: str) -> list[dict]:
    """The run's classes (`rank/classes.json`), in the order the rank stage wrote them."""
    return read_json(classes_path(run_dir))


def vetoes_path(run_dir: str) -> str:
    return FileSystems.join(run_dir, VETOES_FILE)


def read_vetoes(run_dir: str) -> list[str]:
    """The wnids in `RUN/vetoed_classes.txt` (the first word of each line; none without the file)."""
    path = vetoes_path(run_dir)
    if not FileSystems.exists(path):
        return []
    wnids = []
    for number, line in enumerate(read_bytes(path).decode("utf-8", "replace").splitlines(), 1):
        if line.strip() and not line.startswith("#"):
            wnid = line.split()[0]
            if not (len(wnid) == 9 and wnid[0] == "n" and wnid[1:].isascii() and wnid[1:].isdigit()):
                raise ImagenotError(f"{path}: line {number} starts with {wnid!r}, not a wnid (n and 8 digits)")
            wnids.append(wnid)
    return sorted(set(wnids))


def dataset_stage(download_enabled: bool) -> str:
    """The stage whose `dataset/` holds the run's final images: the download stage's when it runs
    (it keeps only images fetched, backfilled from the reserve), else the sample stage's."""
    return DOWNLOAD if download_enabled else SAMPLE


# Where a dataset can lie, the final one first: for readers of a run without its config.
DATASET_STAGES = (dataset_stage(True), dataset_stage(False))


def dataset_shards(run_dir: str, stage: str) -> list[str]:
    """The dataset parquet files of `stage` (one of DATASET_STAGES), sorted."""
    return stage_shards(stage_path(run_dir, stage), DATASET_DIR)


def export_dir(run_dir: str) -> str:
    """`RUN/dataset/`, the export."""
    return FileSystems.join(run_dir, EXPORT_DIR)
