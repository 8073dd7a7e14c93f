"""Super-resolution data from images a package ships (Stern et al. 2018, Sec. 7.2, at demo scale), or from the
CelebA archive at the paper's: ``fastdec superres-data``.

The paper maps 8x8 CelebA faces to 32x32 with an Image Transformer, every output an intensity token (0-255) in raster
order. Offline on a CPU the track cuts a face photograph that matplotlib ships (``grace_hopper.jpg``, 512x600) into
grey-level patches: a high-resolution patch of ``side`` x ``side`` pixels and its low-resolution version, each
``scale`` x ``scale`` block averaged (and rounded) to one pixel. Source and target are the patches' intensities in
raster order, one token per pixel ("0" .. "255"), so the distance-based acceptance rule reads a token's value from
its symbol. Training patches come from the top rows of the image (overlapping, ``stride`` apart); validation and test
patches from the bottom rows, disjoint from them and from each other.

At paper scale (``superres.source: celeba``, :func:`write_celeba_corpus`) every example is one CelebA face of the
aligned-and-cropped release (``img_align_celeba.zip``, 178x218 JPEGs): its border removed as Tensor2Tensor's
img2img_celeba problem does (40 pixels top and bottom, 20 left and right: a 138x138 face), area-averaged to 32x32
(target) and to 8x8 (source), red, green and blue intensities of each pixel in raster order (3,072 and 192 tokens).
The archive's files in name order give the official partition: the first 162,770 training, the next 19,867
development (Table 2's set), the rest test.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Dict, Tuple

import numpy as np

__all__ = ["sample_image", "grey", "patches", "split_rows", "write_corpus", "SAMPLE_IMAGES", "celeba_pair",
           "write_celeba_corpus"]

SAMPLE_IMAGES = ("grace_hopper.jpg",)  # matplotlib's mpl-data/sample_data


def sample_image(name: str) -> np.ndarray:
    """A sample image matplotlib ships, as a grey-level array ``[H, W]`` of uint8."""
    import matplotlib.cbook as cbook
    from PIL import Image

    if name not in SAMPLE_IMAGES:
        raise ValueError(f"superres.image must be one of {', '.join(SAMPLE_IMAGES)}, got {name!r}")
    with cbook.get_sample_data(name) as f:
        return grey(np.asarray(Image.open(f).convert("RGB")))


def grey(rgb: np.ndarray) -> np.ndarray:
    """ITU-R BT.601 luma of an ``[H, W, 3]`` uint8 image, rounded to uint8."""
    y = rgb[..., 0] * 0.299 + rgb[..., 1] * 0.587 + rgb[..., 2] * 0.114
    return np.clip(np.rint(y), 0, 255).astype(np.uint8)


def patches(image: np.ndarray, side: int, scale: int, stride: int) -> Tuple[np.ndarray, np.ndarray]:
    """Every ``side`` x ``side`` patch ``stride`` apart: ``(low [N, (side/scale)^2], high [N, side^2])`` uint8, raster
    order; a low-resolution pixel is the rounded mean of its ``scale`` x ``scale`` block."""
    if side % scale:
        raise ValueError(f"the patch side {side} must be a multiple of the scale {scale}")
    h, w = image.shape
    rows = range(0, h - side + 1, stride)
    cols = range(0, w - side + 1, stride)
    low_side = side // scale
    if not (len(rows) and len(cols)):  # the image is smaller than one patch
        return np.zeros((0, low_side * low_side), np.uint8), np.zeros((0, side * side), np.uint8)
    high = np.stack([image[r:r + side, c:c + side] for r in rows for c in cols])
    n = len(high)
    blocks = high.reshape(n, low_side, scale, low_side, scale).astype(np.float64)
    low = np.clip(np.rint(blocks.mean(axis=(2, 4))), 0, 255).astype(np.uint8)
    return low.reshape(n, -1), high.reshape(n, -1)


def split_rows(image: np.ndarray, held_out: float) -> Tuple[np.ndarray, np.ndarray]:
    """(training rows, held-out rows): the last ``held_out`` fraction of the rows is held out."""
    cut = int(round(image.shape[0] * (1 - held_out)))
    return image[:cut], image[cut:]


def _lines(arr: np.ndarray) -> str:
    return "".join(" ".join(map(str, row)) + "\n" for row in arr.tolist())


def write_corpus(out: Path, image: np.ndarray, *, side: int, scale: int, stride: int, held_out: float,
                 valid: int, test: int, seed: int, max_train: int = 0) -> Dict[str, int]:
    """``out/{train,valid,test}.{lr,hr}``: training patches from the top rows (``stride`` apart, shuffled, at most
    ``max_train`` if > 0), validation and test patches from the held-out rows (``side`` apart: disjoint), drawn
    without replacement. Returns the number of patches per split."""
    top, bottom = split_rows(image, held_out)
    train_lr, train_hr = patches(top, side, scale, stride)
    held_lr, held_hr = patches(bottom, side, scale, side)
    if len(held_lr) < valid + test:
        raise ValueError(f"the held-out rows give {len(held_lr)} patches, fewer than valid + test = {valid + test}: "
                         "raise superres.held_out or lower superres.valid_patches/test_patches")
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(train_lr))
    if max_train > 0:
        order = order[:max_train]
    held = rng.permutation(len(held_lr))
    splits = {"train": order, "valid": held[:valid], "test": held[valid:valid + test]}
    out.mkdir(parents=True, exist_ok=True)
    sizes = {}
    for split, idx in splits.items():
        lr, hr = (train_lr, train_hr) if split == "train" else (held_lr, held_hr)
        (out / f"{split}.lr").write_text(_lines(lr[idx]))
        (out / f"{split}.hr").write_text(_lines(hr[idx]))
        sizes[split] = len(idx)
    return sizes


CELEBA_CROP = (40, 20, 138, 138)  # top, left, height, width: Tensor2Tensor's img2img_celeba border removal


def celeba_pair(jpeg: bytes, side: int, scale: int, crop=CELEBA_CROP) -> Tuple[np.ndarray, np.ndarray]:
    """(low, high) RGB intensities of one face in raster order (pixel by pixel, R G B): the crop area-averaged to
    ``side / scale`` and to ``side`` pixels a side, uint8."""
    import io

    from PIL import Image

    top, left, h, w = crop
    face = Image.open(io.BytesIO(jpeg)).convert("RGB").crop((left, top, left + w, top + h))
    low, high = (np.asarray(face.resize((n, n), Image.BOX), dtype=np.uint8) for n in (side // scale, side))
    return low.reshape(-1), high.reshape(-1)


def write_celeba_corpus(out: Path, archive: str, *, side: int, scale: int, train_images: int, dev_images: int,
                        valid: int, test: int, max_train: int = 0) -> Dict[str, int]:
    """``out/{train,valid,test}.{lr,hr}`` from the aligned CelebA archive: training faces (at most ``max_train`` if
    > 0), the first ``valid`` development faces and the first ``test`` test faces, in the archive's name order."""
    import zipfile

    if side % scale:
        raise ValueError(f"the image side {side} must be a multiple of the scale {scale}")
    with zipfile.ZipFile(archive) as z:
        names = sorted(n for n in z.namelist() if n.lower().endswith(".jpg"))
        if len(names) < train_images + dev_images + test:
            raise ValueError(f"{archive}: {len(names)} JPEGs, fewer than the {train_images} training + {dev_images} "
                             f"development + {test} test faces the config asks for")
        n_train = min(train_images, max_train) if max_train > 0 else train_images
        splits = {"train": names[:n_train], "valid": names[train_images:train_images + min(valid, dev_images)],
                  "test": names[train_images + dev_images:train_images + dev_images + test]}
        out.mkdir(parents=True, exist_ok=True)
        for split, members in splits.items():
            with open(out / f"{split}.lr", "w") as lr, open(out / f"{split}.hr", "w") as hr:
                for name in members:
                    low, high = celeba_pair(z.read(name), side, scale)
                    lr.write(_lines(low[None]))
                    hr.write(_lines(high[None]))
    return {split: len(members) for split, members in splits.items()}


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--out", required=True, help="folder of {train,valid,test}.{lr,hr}")
    ap.add_argument("--image", default=SAMPLE_IMAGES[0])
    ap.add_argument("--side", type=int, default=8, help="high-resolution patch side (pixels)")
    ap.add_argument("--scale", type=int, default=2, help="low-resolution pixel = mean of a scale x scale block")
    ap.add_argument("--stride", type=int, default=2, help="distance between training patches")
    ap.add_argument("--held-out", type=float, default=0.2, help="fraction of the image's rows for valid and test")
    ap.add_argument("--valid", type=int, default=100)
    ap.add_argument("--test", type=int, default=100)
    ap.add_argument("--max-train", type=int, default=0, help="at most this many training patches (0: all)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--celeba", help="the aligned CelebA archive (img_align_celeba.zip): whole faces, RGB, instead of "
                                     "patches of the sample image")
    ap.add_argument("--train-images", type=int, default=162770, help="CelebA: the archive's first N faces train")
    ap.add_argument("--dev-images", type=int, default=19867, help="CelebA: the next N faces are the development set")


def main(a: argparse.Namespace) -> int:
    """The data job of the track: ``fastdec superres-data --out DIR ...``."""
    import json

    if a.celeba:
        sizes = write_celeba_corpus(Path(a.out), a.celeba, side=a.side, scale=a.scale, train_images=a.train_images,
                                    dev_images=a.dev_images, valid=a.valid, test=a.test, max_train=a.max_train)
        info = {"archive": a.celeba, "side": a.side, "scale": a.scale, "channels": "rgb", "images": sizes}
        (Path(a.out) / "corpus.json").write_text(json.dumps(info, indent=2))
        print(json.dumps(info), flush=True)
        return 0
    image = sample_image(a.image)
    sizes = write_corpus(Path(a.out), image, side=a.side, scale=a.scale, stride=a.stride, held_out=a.held_out,
                         valid=a.valid, test=a.test, seed=a.seed, max_train=a.max_train)
    info = {"image": a.image, "shape": list(image.shape), "side": a.side, "scale": a.scale, "stride": a.stride,
            "held_out": a.held_out, "patches": sizes}
    (Path(a.out) / "corpus.json").write_text(json.dumps(info, indent=2))
    print(json.dumps(info), flush=True)
    return 0
