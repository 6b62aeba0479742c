"""Train the sense head the label library ships (`labels/sense_model/`: `head.npz`, `head.json`) on
SemCor's training documents.

    python -m imagenot.labels.sense_model.train [--epochs 1] [--seed 0] [--threads 2]

It reads with the label library's own encoders (`labels.encoders`): the span encoder and the
packaged MiniLM, the encoder the head's glosses are embedded by (and the config of a build that
reads the head must name, `head.json`'s `scoring`).

BEM-style (Blevins & Zettlemoyer 2020), made cheap: the gloss side stays frozen (each noun sense's
gloss vector: the mean embedding of its sense queries, `SenseQueries` with the default templates),
and the context side tunes only the encoder's last `--tuned` layers
over hidden states computed once, plus a bilinear map W and a scale. A word's vector is the mean of
its word pieces in the last layer (`SpanEncoder`, one layer), L2 normalised; its logit for a sense is
`scale x cos(word, gloss) + word' W gloss`, trained by cross-entropy over the word's noun senses (the
hard negatives: the word's other senses). Rows: `wordnet.semcor.polysemous_rows("train")`, the
annotations of 2+-sense nouns in the 149 training documents, and with `--examples` WordNet's own
usage examples too (`labels.sense_model.examples`: they reach the rare senses; the shipped head
was trained without them, see benchmarks/README.md); dev documents pick the epoch (every
`--check` steps, the best mean of accuracy and accuracy where the gold is not the training
documents' most frequent sense); test documents are never read. Seeded: the same seed, data and
library versions give the same weights. `head.json` records the seed, steps, rows, figures on dev,
and the hours it took on this machine's CPUs.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import platform
import time
from pathlib import Path

import numpy as np

from imagenot.labels.encoders.models import DEFAULT_MODEL
from imagenot.labels.encoders.spans import SpanEncoder, _pieces
from imagenot.labels.encoders.text import SentenceTransformerEncoder
from imagenot.labels.sense_model.examples import example_rows
from imagenot.labels.sense_model.head import HEAD_DIR, LAYER_PREFIX, save_head
from imagenot.labels.senses.encoders import TextEncoder
from imagenot.labels.senses.sentence import SenseQueries
from imagenot.labels.senses.settings import SenseSettings
from imagenot.wordnet.semcor import SEMCOR_FILE, PolysemousRows, most_frequent_sense, polysemous_rows
from imagenot.wordnet.senses import WordSenses, word_senses

SENTENCES_PER_STEP = 32


class Part:
    """A part's rows grouped by sentence, with the hidden states entering the tuned layers."""

    def __init__(self, rows: PolysemousRows, spans: SpanEncoder, tuned: int, senses: WordSenses):
        import torch

        self.rows = rows
        distinct = list(dict.fromkeys(rows.sentences))
        at = {s: i for i, s in enumerate(distinct)}
        tokens = spans.tokenizer(distinct, truncation=True, max_length=spans.max_length, return_offsets_mapping=True)
        ids = tokens["input_ids"]
        self.states: list[np.ndarray] = [np.zeros(0)] * len(ids)
        cut = spans.model.config.num_hidden_layers - tuned
        order = np.argsort([len(i) for i in ids], kind="stable")  # padded batches of like lengths, always the same
        with torch.inference_mode():
            for start in range(0, len(order), 64):
                batch = order[start : start + 64]
                inputs = torch.zeros(len(batch), max(len(ids[r]) for r in batch), dtype=torch.long)
                mask = torch.zeros_like(inputs)
                for k, r in enumerate(batch):
                    inputs[k, : len(ids[r])], mask[k, : len(ids[r])] = torch.tensor(ids[r]), 1
                hidden = spans.model(input_ids=inputs, attention_mask=mask, output_hidden_states=True).hidden_states
                for k, r in enumerate(batch):
                    self.states[r] = hidden[cut][k, : len(ids[r])].numpy().copy()
        self.by_sentence: dict[int, list[int]] = {}
        self.pieces = []
        for i, (sentence, span) in enumerate(zip(rows.sentences, rows.spans)):
            self.by_sentence.setdefault(at[sentence], []).append(i)
            self.pieces.append(_pieces(tokens["offset_mapping"][at[sentence]], span))
        self.targets = [c.index(g) for c, g in zip(rows.candidates, rows.gold)]
        self.mfs = np.array([most_frequent_sense(senses, w, c) for w, c in zip(rows.words, rows.candidates)])


class Trainer:
    def __init__(self, spans: SpanEncoder, tuned: int, glosses: dict[str, np.ndarray], lr: float):
        import torch

        top = spans.model.encoder.layer
        self.first = len(top) - tuned
        self.layers = torch.nn.ModuleList([copy.deepcopy(top[i]) for i in range(self.first, len(top))]).train()
        self.wnids = sorted(glosses)
        self.at = {w: i for i, w in enumerate(self.wnids)}
        self.glosses = torch.tensor(np.stack([glosses[w] for w in self.wnids]), dtype=torch.float32)
        dim = self.glosses.shape[1]
        self.weights = torch.nn.Parameter(torch.zeros(dim, dim))
        self.scale = torch.nn.Parameter(torch.tensor(8.0))
        self.optimizer = torch.optim.AdamW(
            [{"params": self.layers.parameters(), "lr": lr}, {"params": [self.weights, self.scale], "lr": 1e-3}],
            weight_decay=0.01,
        )

    def word_vectors(self, part: Part, sentences: list[int]):
        """(unit word vectors, their rows) of the rows of `sentences`, through the tuned layers."""
        import torch

        length = max(len(part.states[s]) for s in sentences)
        x = torch.zeros(len(sentences), length, self.glosses.shape[1])
        mask = torch.full((len(sentences), 1, 1, length), torch.finfo(torch.float32).min)
        for k, s in enumerate(sentences):
            x[k, : len(part.states[s])] = torch.from_numpy(part.states[s])
            mask[k, 0, 0, : len(part.states[s])] = 0
        for layer in self.layers:
            out = layer(x, attention_mask=mask)
            x = out[0] if isinstance(out, tuple) else out
        rows = [i for s in sentences for i in part.by_sentence[s]]
        by_row = [x[k, part.pieces[i]].mean(0) for k, s in enumerate(sentences) for i in part.by_sentence[s]]
        return torch.nn.functional.normalize(torch.stack(by_row), dim=-1), rows

    def logits(self, part: Part, vector, row: int):
        glosses = self.glosses[[self.at[w] for w in part.rows.candidates[row]]]
        return self.scale * (glosses @ vector) + glosses @ (self.weights @ vector)

    def step(self, part: Part, sentences: list[int]) -> float:
        import torch

        vectors, rows = self.word_vectors(part, sentences)
        losses = [
            torch.nn.functional.cross_entropy(self.logits(part, v, i)[None], torch.tensor([part.targets[i]]))
            for v, i in zip(vectors, rows)
        ]
        loss = torch.stack(losses).mean()
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad()
        return loss.item()

    def figures(self, part: Part) -> dict:
        import torch

        self.layers.eval()
        right = np.zeros(len(part.targets), bool)
        with torch.no_grad():
            sentences = sorted(part.by_sentence)
            for start in range(0, len(sentences), 64):
                vectors, rows = self.word_vectors(part, sentences[start : start + 64])
                for v, i in zip(vectors, rows):
                    right[i] = int(self.logits(part, v, i).argmax()) == part.targets[i]
        self.layers.train()
        not_mfs = part.mfs != np.array(part.rows.gold)
        return {"accuracy": round(float(right.mean()), 4), "not_mfs": round(float(right[not_mfs].mean()), 4)}

    def state(self) -> dict[str, np.ndarray]:
        """The tuned layers' parameters, named as in the encoder's state dict."""
        return {
            f"{LAYER_PREFIX}{self.first + k}.{name}": value.detach().numpy().copy()
            for k, layer in enumerate(self.layers)
            for name, value in layer.state_dict().items()
        }


def joined(first: PolysemousRows, second: PolysemousRows) -> PolysemousRows:
    """The rows of both, first's then second's."""
    return PolysemousRows(*(getattr(first, f.name) + getattr(second, f.name) for f in dataclasses.fields(first)))


def gloss_vectors(
    wnids: list[str], settings: SenseSettings, text: TextEncoder, senses: WordSenses
) -> dict[str, np.ndarray]:
    """wnid -> its unit gloss vector: the mean of its sense queries' embeddings."""
    vectors = SenseQueries(settings, text, senses).vectors(wnids).mean(axis=1)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return dict(zip(wnids, vectors.astype(np.float32)))


def main() -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--tuned", type=int, default=2, help="the encoder's top layers tuned")
    parser.add_argument("--lr", type=float, default=5e-5, help="the tuned layers' learning rate")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--check", type=int, default=100, help="steps between checks on the dev documents")
    parser.add_argument("--out", type=Path, default=HEAD_DIR)
    parser.add_argument("--examples", action=argparse.BooleanOptionalAction, default=False, help="WordNet examples too")
    args = parser.parse_args()
    started = time.time()
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    settings, senses = SenseSettings(), word_senses()
    spans = SpanEncoder(DEFAULT_MODEL, layers=1, threads=args.threads)
    rows = polysemous_rows("train", senses)
    if args.examples:
        rows = joined(rows, example_rows(senses))
    train, dev = Part(rows, spans, args.tuned, senses), Part(polysemous_rows("dev", senses), spans, args.tuned, senses)
    wnids = sorted({w for part in (train, dev) for c in part.rows.candidates for w in c})
    text = SentenceTransformerEncoder(DEFAULT_MODEL, threads=1)
    trainer = Trainer(spans, args.tuned, gloss_vectors(wnids, settings, text, senses), args.lr)
    rng = np.random.default_rng(args.seed)
    sentences = np.array(sorted(train.by_sentence))
    total = int(args.epochs * len(sentences) / SENTENCES_PER_STEP)
    best = (-1.0, None, None)
    for step in range(1, total + 1):
        if (step - 1) % (len(sentences) // SENTENCES_PER_STEP) == 0:
            order = rng.permutation(sentences)
        offset = ((step - 1) % (len(sentences) // SENTENCES_PER_STEP)) * SENTENCES_PER_STEP
        loss = trainer.step(train, order[offset : offset + SENTENCES_PER_STEP].tolist())
        if step % args.check == 0 or step == total:
            figures = trainer.figures(dev)
            print(f"step {step}/{total} loss {loss:.3f} dev {figures} ({time.time() - started:.0f} s)", flush=True)
            if figures["accuracy"] + figures["not_mfs"] > best[0]:
                best = (figures["accuracy"] + figures["not_mfs"], step, figures)
                kept = (trainer.weights.detach().numpy().copy(), float(trainer.scale), trainer.state())
    weights, scale, tuned = kept
    card = {
        "method": "BEM-style sense head: frozen gloss vectors (mean of the sense queries' embeddings), the encoder's "
        f"last {args.tuned} layers tuned with a bilinear map, cross-entropy over each word's noun senses",
        "encoder": text.model_id,  # as TrainedSenses checks it
        "scoring": {
            "encoder": "sentence-transformers",
            "model": DEFAULT_MODEL,
            "runtime": "torch",
        },  # as configs name it
        "layers": 1,
        "tuned_layers": args.tuned,
        "templates": list(settings.templates),
        "trained_on": "SemCor 3.0 training documents (wordnet/semcor.py: 149 documents), nouns of 2+ senses"
        + (", and WordNet 3.0's noun usage examples (labels/sense_model/examples.py)" if args.examples else ""),
        "semcor_file": SEMCOR_FILE.name,
        "train_rows": len(train.targets),
        "train_sentences": len(sentences),
        "steps": total,
        "chosen_step_on_dev": best[1],
        "dev": best[2],
        "seed": args.seed,
        "learning_rate": args.lr,
        "epochs": args.epochs,
        "hours": round((time.time() - started) / 3600, 3),
        "machine": f"{platform.machine()}, {args.threads} CPU threads, torch {torch.__version__}",
    }
    save_head(args.out, weights, scale, card, tuned)
    print(json.dumps(card))


if __name__ == "__main__":
    main()
