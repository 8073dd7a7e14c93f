"""The super-resolution track at paper scale (config/celeba_superres.yaml): CelebA faces from the aligned archive's
layout, cropped and area-averaged as Stern et al. Sec. 7.2 / Tensor2Tensor's img2img_celeba do, and the fetch rule
downloading the archive from a local HTTP server."""
import io
import subprocess
import zipfile
from pathlib import Path
from urllib.parse import urlparse

import numpy as np
import pytest
import yaml
from PIL import Image
from snakemake.utils import validate

from fastdec.tracks.superres import images, plan
from fastdec.workflow import check_config
from helpers.table4_fixtures import http_server
from helpers.workflow_runs import REPO, SNAKEMAKE

CONFIG = REPO / "config/celeba_superres.yaml"
INSIDE, BORDER = (200, 40, 120), (0, 255, 0)  # the face's colour and the border's the crop removes


def face(seed: int) -> bytes:
    """One 178x218 aligned-CelebA-shaped JPEG: a uniform face with its left half brightened by ``seed``, inside a
    border of another colour where the crop cuts it away."""
    pixels = np.empty((218, 178, 3), np.uint8)
    pixels[:] = BORDER
    top, left, h, w = images.CELEBA_CROP
    pixels[top:top + h, left:left + w] = INSIDE
    pixels[top:top + h, left:left + w // 2, 0] = 200 + seed
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "JPEG", quality=100, subsampling=0)
    return out.getvalue()


def celeba_zip(path: Path, n: int) -> Path:
    """The aligned archive's layout: ``img_align_celeba/000001.jpg`` ... in one zip, members out of name order."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        for i in reversed(range(1, n + 1)):
            z.writestr(f"img_align_celeba/{i:06d}.jpg", face(i % 50))
    return path


def test_a_face_is_cropped_then_area_averaged_to_8_and_32_pixels_rgb_in_raster_order():
    low, high = images.celeba_pair(face(30), side=32, scale=4)
    assert low.shape == (8 * 8 * 3,) and high.shape == (32 * 32 * 3,) and high.dtype == np.uint8
    hi = high.reshape(32, 32, 3).astype(int)
    # no border colour survives the crop: green stays the face's 40 everywhere
    assert np.abs(hi[..., 1] - INSIDE[1]).max() <= 3 and np.abs(hi[..., 2] - INSIDE[2]).max() <= 3
    # raster order, pixel by pixel R G B: the left half is the brightened red
    assert abs(hi[5, 3, 0] - 230) <= 3 and abs(hi[5, 28, 0] - INSIDE[0]) <= 3
    assert high[:3].tolist() == hi[0, 0].tolist()
    lo = low.reshape(8, 8, 3).astype(int)
    assert abs(lo[2, 1, 0] - 230) <= 3 and abs(lo[2, 6, 0] - INSIDE[0]) <= 3


def test_the_archive_splits_in_name_order_into_train_dev_and_test(tmp_path):
    archive = celeba_zip(tmp_path / "img_align_celeba.zip", 12)
    sizes = images.write_celeba_corpus(tmp_path / "data", str(archive), side=8, scale=4, train_images=6,
                                       dev_images=4, valid=3, test=2)
    assert sizes == {"train": 6, "valid": 3, "test": 2}
    lines = {f"{s}.{x}": (tmp_path / "data" / f"{s}.{x}").read_text().splitlines()
             for s in sizes for x in ("lr", "hr")}
    assert {len(v[0].split()) for k, v in lines.items() if k.endswith(".hr")} == {8 * 8 * 3}
    assert {len(v[0].split()) for k, v in lines.items() if k.endswith(".lr")} == {2 * 2 * 3}
    # the first red value tells the face: 000001-000006 train, 000007-000009 dev (of 000007-000010), 000011-12 test
    red = {s: [int(line.split()[0]) - 200 for line in lines[f"{s}.hr"]] for s in sizes}
    for split, faces in [("train", range(1, 7)), ("valid", range(7, 10)), ("test", (11, 12))]:
        assert len(red[split]) == len(faces)
        assert all(abs(r - want) <= 1 for r, want in zip(red[split], faces)), (split, red[split])
    with pytest.raises(ValueError, match="fewer than the 10 training"):
        images.write_celeba_corpus(tmp_path / "x", str(archive), side=8, scale=4, train_images=10, dev_images=4,
                                   valid=1, test=1)


def paper_config() -> dict:
    cfg = yaml.safe_load(CONFIG.read_text())
    validate(cfg, str(REPO / "workflow/schemas/config.schema.yaml"))
    check_config(cfg, str(REPO))
    return cfg


def test_the_paper_scale_config_reads_the_downloaded_faces_at_the_papers_sizes():
    cfg = paper_config()
    sr = plan.section(cfg)
    assert (sr["patch_side"], sr["scale"], sr["epsilon"], sr["block_sizes"]) == (32, 4, 2, [2, 4, 6, 8, 10])
    assert plan.tokens(sr) == 3072 and sr["valid_patches"] == sr["celeba"]["dev_images"] == 19867
    archive = "results/superres_downloads/img_align_celeba.zip"
    assert plan.data_inputs(sr) == [archive] and f"--celeba {archive}" in plan.data_args(sr)
    url = plan.downloads(cfg, "R")["superres_downloads"]["img_align_celeba.zip"]["url"]
    assert urlparse(url).scheme == "https" and "0B7EVK8r0v71pZjFTYXZWM3FlRnM" in url
    runs = plan.bench_runs(cfg, "results/celeba_superres")
    assert {r.max_len_b for r in runs.values()} == {3072} and {r.gpus for r in runs.values()} == {1}
    base = sr["base"]["extra_args"]
    assert (base["encoder-layers"], base["decoder-layers"], base["decoder-embed-dim"]) == (4, 8, 512)


def test_the_fetch_rule_downloads_the_archive_and_the_data_job_reads_its_layout(tmp_path):
    """The config's data steps run against a local HTTP server serving a fixture archive at the URL's path."""
    www, work = tmp_path / "www", tmp_path / "work"
    cfg = paper_config()
    c = cfg["superres"]
    celeba_zip(www / urlparse(c["celeba"]["url"]).path.lstrip("/"), 14)
    c["celeba"].update(train_images=8, dev_images=4)
    c.update(valid_patches=3, test_patches=2)
    cfg["experiment"], cfg["device"] = "celeba_fixture", "cpu"  # the data steps; no GPU job runs
    work.mkdir()
    path = work / "celeba_fixture.yaml"
    with http_server(www) as base:
        c["celeba"]["url"] = base + urlparse(c["celeba"]["url"]).path
        path.write_text(yaml.safe_dump(cfg))
        data = "results/celeba_fixture/superres/data"
        r = subprocess.run([SNAKEMAKE, "-s", str(REPO / "Snakefile"), "--directory", str(work), "--cores", "1",
                            f"{data}/valid.hr", f"{data}/test.lr", "--configfile", str(path)],
                           cwd=REPO, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert (work / "results/superres_downloads/img_align_celeba.zip").is_file()
    assert "rule fetch:" in r.stdout + r.stderr
    valid = (work / data / "valid.hr").read_text().splitlines()
    assert len(valid) == 3 and {len(v.split()) for v in valid} == {3072}
    assert len((work / data / "train.lr").read_text().splitlines()) == 8
    assert {len(v.split()) for v in (work / data / "test.lr").read_text().splitlines()} == {192}
