"""CLIP image and text embeddings with open_clip, in an environment without torchvision.

The torchvision problem. open_clip_torch declares torchvision as a dependency and imports it at
module import: `open_clip/transform.py` (its PIL preprocessing) and `open_clip/utils.py`
(`FrozenBatchNorm2d`, used only to freeze ResNet towers for fine-tuning). Any `open_clip.*`
import runs the package `__init__`, which imports both, so no part of open_clip loads without
torchvision. But the only torchvision on PyPI for our torch (2.13 CPU) is a CUDA build whose
extension fails to load (`operator torchvision::nms does not exist`), and once installed it also
breaks `transformers` and `sentence-transformers`, which the score stage needs.

The solution, in two parts:

1. Install open_clip without its declared dependencies and add the ones our path really uses:
   `pip install -c constraints.txt --no-deps open_clip_torch==3.3.0` and
   `pip install -c constraints.txt ftfy` (the BPE tokenizer; regex, huggingface_hub, safetensors,
   tqdm and torch are already there). timm is left out on purpose: it imports torchvision too, and
   open_clip imports it only inside a try block, for timm-backed towers we do not use.
2. While open_clip is imported, and only when torchvision is not installed, `_absent_torchvision`
   puts placeholder modules under the torchvision names open_clip imports. Every name taken from
   them is a placeholder class that raises ModuleNotFoundError when called or instantiated, so
   open_clip's torchvision-backed helpers (`image_transform`, `freeze_batch_norm_2d`) fail loudly
   if anything ever calls them. transformers (which open_clip imports) is imported first and the
   placeholders leave `sys.modules` right after, so transformers' own availability checks still
   see that torchvision is absent. This shim is
   needed because there is no import-time switch in open_clip and no working torchvision; where
   a real torchvision is installed (e.g. a CUDA machine), it is used and nothing is replaced.

The model path is open_clip's own: `create_model` (random init, a checkpoint file, or a
`local-dir:` folder), `get_tokenizer`, `encode_image` and `encode_text`. Only the eval-time
preprocessing is ours (`preprocess`), a PIL + numpy rendering of open_clip's `image_transform`
(is_train=False) driven by the model's own `preprocess_cfg` (size, mean, std, interpolation,
resize mode).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import io
import os
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch
from PIL import Image

# Module names open_clip 3.x imports from torchvision at import time.
_TORCHVISION_MODULES = (
    "torchvision",
    "torchvision.transforms",
    "torchvision.transforms.functional",
    "torchvision.ops",
    "torchvision.ops.misc",
)


class _AbsentMeta(type):
    """Placeholders for torchvision names: attribute access gives another placeholder (so
    `InterpolationMode.BICUBIC` and subclassing work at import); calling one raises."""

    def __getattr__(cls, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return _placeholder(f"{cls.__qualname__}.{name}")

    def __call__(cls, *args, **kwargs):
        raise ModuleNotFoundError(
            f"{cls.__qualname__} needs torchvision, which is not installed here; "
            "imagenot preprocesses images itself (pipeline.audit.clip_model.preprocess)"
        )


def _placeholder(qualname: str) -> type:
    return _AbsentMeta(qualname.rsplit(".", 1)[-1], (), {"__qualname__": qualname})


class _AbsentModule(types.ModuleType):
    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return _placeholder(f"{self.__name__}.{name}")


@contextlib.contextmanager
def _absent_torchvision() -> Iterator[None]:
    placeholders = {name: _AbsentModule(name) for name in _TORCHVISION_MODULES}
    for module in placeholders.values():
        module.__path__ = []  # a package, so `import torchvision.ops.misc` resolves
    sys.modules.update(placeholders)
    try:
        yield
    finally:
        for name in placeholders:
            sys.modules.pop(name, None)


@functools.cache
def open_clip() -> types.ModuleType:
    """The open_clip package, imported with placeholder torchvision names if torchvision is absent."""
    if importlib.util.find_spec("torchvision") is not None:
        import open_clip as module

        return module
    if importlib.util.find_spec("transformers") is not None:
        # open_clip imports transformers (for HF text towers); it must run its own torchvision
        # check before the placeholders exist, or it would take them for the real package.
        import transformers  # noqa: F401
    with _absent_torchvision():
        import open_clip as module
    return module


def preprocess(image: Image.Image, cfg: dict) -> np.ndarray:
    """open_clip's eval transform on one image: a float32 (3, H, W) array.

    Resize (shortest edge to the size, or squash to it) with the configured PIL filter, centre
    crop, convert to the configured mode, scale to [0, 1], normalise by mean and std -- the
    steps and rounding of torchvision's Resize, CenterCrop, ToTensor and Normalize on PIL images.
    """
    size = cfg.get("size", 224)
    height, width = (size, size) if isinstance(size, int) else tuple(size)
    resample = Image.Resampling.BILINEAR if cfg.get("interpolation") == "bilinear" else Image.Resampling.BICUBIC
    mode = cfg.get("resize_mode") or "shortest"
    if mode == "squash":
        image = _resize(image, (width, height), resample)
    elif mode == "shortest" and height == width:
        w, h = image.size
        short, long = (w, h) if w <= h else (h, w)
        new_long = int(height * long / short)
        image = _resize(image, (height, new_long) if w <= h else (new_long, height), resample)
        image = _center_crop(image, width, height)
    else:
        raise ValueError(
            f"open_clip resize_mode {mode!r} with size {size!r} is not supported (only 'shortest' square or 'squash')"
        )
    pixels = np.asarray(image.convert(cfg.get("mode", "RGB")), dtype=np.float32) / 255.0
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    mean = np.asarray(cfg.get("mean"), np.float32)
    std = np.asarray(cfg.get("std"), np.float32)
    return ((pixels - mean) / std).transpose(2, 0, 1).copy()


def _resize(image: Image.Image, size: tuple[int, int], resample: Image.Resampling) -> Image.Image:
    return image if image.size == size else image.resize(size, resample)


def _center_crop(image: Image.Image, width: int, height: int) -> Image.Image:
    w, h = image.size
    top, left = round((h - height) / 2.0), round((w - width) / 2.0)
    return image.crop((left, top, left + width, top + height))


class ClipModel:
    """An open_clip model in eval mode with its tokenizer and preprocessing config."""

    def __init__(
        self, model_name: str, weights: str | None, model_config: str | None = None, seed: int = 0, threads: int = 1
    ):
        """`threads`: torch threads for this process (one keeps the bits independent of the machine)."""
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        torch.set_num_threads(threads)
        oc = open_clip()
        if model_config is not None:
            path = Path(model_config)
            if not path.is_file():
                raise FileNotFoundError(f"{model_config}: no open_clip model config file here")
            oc.add_model_config(path)
        if weights is not None and not Path(weights).is_file():
            raise FileNotFoundError(f"{weights}: no CLIP weights file here")
        torch.manual_seed(seed)  # random init (no weights) gives the same model in every worker
        self.model = oc.create_model(model_name, pretrained=weights, device="cpu")
        self.model.eval()
        self.tokenizer = oc.get_tokenizer(model_name)
        self.preprocess_cfg = oc.get_model_preprocess_cfg(self.model)
        self.dim = self.encode_texts([""]).shape[1]

    def pixels(self, image_bytes: bytes) -> np.ndarray:
        """One encoded image (JPEG, PNG, ...) preprocessed; PIL errors propagate."""
        with Image.open(io.BytesIO(image_bytes)) as image:
            image.load()
            return preprocess(image, self.preprocess_cfg)

    @torch.inference_mode()
    def encode_pixels(self, pixels: np.ndarray) -> np.ndarray:
        """(n, 3, H, W) preprocessed images -> (n, d) L2-normalised float32 embeddings."""
        return self.model.encode_image(torch.from_numpy(pixels), normalize=True).numpy().astype(np.float32)

    @torch.inference_mode()
    def encode_texts(self, texts: list[str]) -> np.ndarray:
        """Texts -> (n, d) L2-normalised float32 embeddings."""
        return self.model.encode_text(self.tokenizer(texts), normalize=True).numpy().astype(np.float32)
