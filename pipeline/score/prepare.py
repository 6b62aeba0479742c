"""`imagenot prepare-models`: the scoring model artifacts built once, offline, as set-up does for
WordNet: the first phase's static model distilled from the encoder, the encoder's ONNX export,
and, for the context sense method (`scoring.sense_method` context or both), its sense vectors
(SemCor's training documents embedded: about three minutes on one core)."""

from __future__ import annotations

import json

import click


@click.command("prepare-models")
@click.option(
    "--config", "config_path", help="config (local or gs://) whose scoring model to prepare [default: the defaults]"
)
def prepare_models_command(config_path: str | None) -> None:
    """Distil the static first-phase model, export the encoder to ONNX and build the sense vectors
    (cached; set-up runs it)."""
    # imported here, so that `--help` loads no torch
    from imagenot.labels.encoders.spans import SpanEncoder
    from imagenot.pipeline.config.schema import load_config
    from imagenot.pipeline.score.model_cache import PROVENANCE_FILE
    from imagenot.pipeline.score.onnx_runtime import export_onnx
    from imagenot.pipeline.score.runtimes import load_encoder
    from imagenot.pipeline.score.sense_vectors import prepare_sense_vectors
    from imagenot.pipeline.score.stage import _encoder_options
    from imagenot.pipeline.score.static_model import describe, prepare_static_model

    scoring = load_config(config_path).scoring
    if scoring.first_phase_model is None:
        folder = prepare_static_model(scoring.model)
        click.echo(f"static model: {describe(json.loads((folder / PROVENANCE_FILE).read_text(encoding='utf-8')))}")
    encoder = load_encoder(scoring.encoder, scoring.model, "torch", **_encoder_options(scoring))
    click.echo(f"ONNX export of {encoder.model_id}: {export_onnx(encoder)}")
    if scoring.sense_method in ("context", "both"):
        spans = SpanEncoder(scoring.model, scoring.sense_layers, scoring.max_length, scoring.batch_size)
        provenance = json.loads((prepare_sense_vectors(spans) / PROVENANCE_FILE).read_text(encoding="utf-8"))
        click.echo(
            f"sense vectors of {provenance['encoder']}: {provenance['synsets']:,} synsets from "
            f"{provenance['annotations']:,} SemCor annotations"
        )
