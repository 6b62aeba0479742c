"""The audits declared as stages (embed, duplicates, agreement) as the command line shows them
before their modules load (CLIP's torch, faiss, Beam): each one's help and options (its
declaration holds the rest), and its command built from them."""

from __future__ import annotations

import functools
import importlib

import click

from imagenot.pipeline.frame.stage_command import face_command
from imagenot.pipeline.frame.stage_order import CommandFace

drop_option = click.option(
    "--drop",
    is_flag=True,
    help="take the flagged images out of the dataset and backfill each class from its reserve, "
    "pass after pass (image_audit.drop_passes); needs download.enabled",
)

# command name -> (its module here, whose DECLARATION it runs; its face)
FACES = {
    "embed": ("embeddings", CommandFace("Embed every downloaded image and caption with CLIP.")),
    "duplicates": (
        "duplicates",
        CommandFace(
            "Find exact and near-duplicate images, split leaks, reference overlap; --drop takes them out.",
            (drop_option,),
        ),
    ),
    "agreement": (
        "agreement",
        CommandFace(
            "Image-class and image-caption agreement; intra/inter-class similarity; "
            "--drop takes out images failing a threshold.",
            (drop_option,),
        ),
    ),
}


@functools.cache  # one command: the module's (`embed_command`, ...) is the one `imagenot audit` runs
def audit_command(name: str) -> click.Command:
    """The command of audit `name`, whose module is imported when the command runs."""
    module, face = FACES[name]
    return face_command(name, face, lambda: importlib.import_module(f"imagenot.pipeline.audit.{module}").DECLARATION)
