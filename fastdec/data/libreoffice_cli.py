"""``fastdec build-libreoffice-corpus``: build the embedded English->German LibreOffice-help corpus
(resources/ende_libreoffice).

Downloads the Debian packages ``libreoffice-help-en-us`` and ``libreoffice-help-de`` with
``apt-get download`` (or takes already downloaded .deb files with ``--debs DIR``), extracts
them with ``dpkg-deb -x``, pairs the help paragraphs by their (file, id) key, sentence-splits,
filters and splits them (fastdec.data.libreoffice), and writes

    OUT/{train,valid,test}.{en,de}.gz   one sentence per line, UTF-8, gzip mtime=0
    OUT/MANIFEST.json                   packages, versions, sha256, counts, split sizes
    OUT/NOTICE                          licence (MPL-2.0) and how to rebuild

Rebuilding from the same .deb files gives byte-identical output.

    fastdec build-libreoffice-corpus                      # apt-get download (pinned)
    fastdec build-libreoffice-corpus --debs /path/to/debs # offline

apt-get download needs a Debian 12 (bookworm) source in the apt lists (run apt-get update
first); if the pinned version has left the mirror, fetch it from snapshot.debian.org and
use --debs, or pass --apt-version '' to take the candidate (the MANIFEST records which).
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from fastdec.data import libreoffice as lo

REPO = Path(__file__).resolve().parents[2]

SCRIPT_VERSION = "1"
DEFAULT_VERSION = "4:7.4.7-1+deb12u14"
# language code in the corpus file names -> (Debian package, help directory)
LANGS = {"en": ("libreoffice-help-en-us", "en-US"), "de": ("libreoffice-help-de", "de")}
SPLITS = ("train", "valid", "test")
HELP_ROOT = Path("usr/share/libreoffice/help")


def log(msg: str) -> None:
    print(f"[build-libreoffice-corpus] {msg}", file=sys.stderr, flush=True)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def apt_download(dest: Path, version: str) -> None:
    specs = [f"{pkg}={version}" if version else pkg for pkg, _ in LANGS.values()]
    log(f"apt-get download {' '.join(specs)}")
    try:
        subprocess.run(["apt-get", "download", *specs], cwd=dest, check=True, stdout=sys.stderr)
    except (OSError, subprocess.CalledProcessError) as err:
        raise SystemExit(f"apt-get download failed ({err}); see --help for --debs / --apt-version")


def find_deb(directory: Path, package: str) -> Path:
    found = sorted(directory.glob(f"{package}_*.deb"))
    if len(found) != 1:
        raise SystemExit(f"expected exactly one {package}_*.deb in {directory}, found {len(found)}")
    return found[0]


def deb_info(deb: Path) -> dict:
    fields = subprocess.run(["dpkg-deb", "-f", str(deb), "Package", "Version", "Architecture",
                             "Source"], check=True, capture_output=True, text=True).stdout
    info = {}
    for line in fields.splitlines():
        key, _, value = line.partition(":")
        info[key.strip().lower()] = value.strip()
    info.update(filename=deb.name, sha256=sha256_file(deb), bytes=deb.stat().st_size)
    return info


def read_pages(root: Path) -> dict[str, str]:
    """{path relative to root: html} for every *.html below root, sorted."""
    if not root.is_dir():
        raise SystemExit(f"help directory not found: {root}")
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(root.rglob("*.html"))}


def write_gz(path: Path, lines: list[str]) -> dict:
    data = "".join(line + "\n" for line in lines).encode("utf-8")
    buf = io.BytesIO()
    # filename="" and mtime=0: no name or timestamp in the gzip header -> reproducible bytes
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as gz:
        gz.write(data)
    path.write_bytes(buf.getvalue())
    return {"lines": len(lines), "sha256_uncompressed": hashlib.sha256(data).hexdigest()}


NOTICE = """\
English-German parallel corpus from the LibreOffice help (resources/ende_libreoffice)
=====================================================================================

Content: sentence/paragraph pairs taken from the LibreOffice {lo_version} help pages in
English (en-US) and German (de), as shipped by Debian:

{packages}
The LibreOffice help is Copyright (c) The Document Foundation and contributors, and is
licensed under the Mozilla Public License, v. 2.0 (MPL-2.0); a copy of the MPL is
available at https://mozilla.org/MPL/2.0/ . The Source Code Form of the help is available
from https://git.libreoffice.org/help (and from the Debian source package "libreoffice").
The files in this directory are an extract of that content (text only, paragraphs paired
by their ids, sentence-split, filtered) and are distributed under the same MPL-2.0 terms.

Files: {{train,valid,test}}.{{en,de}}.gz -- one segment per line, UTF-8, line i of X.en is
the translation of line i of X.de. MANIFEST.json records the package versions, the sha256
of each .deb, what every filter dropped and the split sizes.

Rebuild (byte-identical from the same .deb files; needs apt-get and dpkg-deb):

    fastdec build-libreoffice-corpus                            # apt-get download, pinned version
    fastdec build-libreoffice-corpus --debs DIR                 # .deb files already in DIR

Processing: fastdec/data/libreoffice.py (extraction, pairing, splitting, filters), script
version {script_version}, seed {seed}.
"""


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--debs", type=Path, help="directory holding libreoffice-help-{en-us,de}_*.deb "
                    "(default: apt-get download into a temporary directory)")
    ap.add_argument("--apt-version", default=DEFAULT_VERSION,
                    help=f"package version for apt-get download ('' = candidate; default {DEFAULT_VERSION})")
    ap.add_argument("--out", type=Path, default=REPO / "resources" / "ende_libreoffice",
                    help="output directory (default: resources/ende_libreoffice)")
    ap.add_argument("--valid", type=int, default=1000, help="valid size (default 1000)")
    ap.add_argument("--test", type=int, default=1000, help="test size (default 1000)")
    ap.add_argument("--seed", type=int, default=1234, help="split shuffle seed (default 1234)")


def main(args: argparse.Namespace) -> int:

    with tempfile.TemporaryDirectory(prefix="lo_help_") as tmp:
        tmp = Path(tmp)
        deb_dir = args.debs
        if deb_dir is None:
            deb_dir = tmp / "debs"
            deb_dir.mkdir()
            apt_download(deb_dir, args.apt_version)
        packages, pages = [], {}
        for lang, (package, help_dir) in LANGS.items():
            deb = find_deb(deb_dir, package)
            info = deb_info(deb)
            log(f"{info['package']} {info['version']} sha256={info['sha256'][:16]}...")
            root = tmp / f"root_{lang}"
            subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
            pages[lang] = read_pages(root / HELP_ROOT / help_dir / "text")
            log(f"{lang}: {len(pages[lang])} help pages")
            packages.append({**info, "lang": lang, "help_dir": (HELP_ROOT / help_dir / "text").as_posix()})

    log("extracting, pairing, splitting, filtering ...")
    splits, counts = lo.build_corpus(pages["en"], pages["de"], valid=args.valid, test=args.test,
                                     seed=args.seed)
    for key in ("units_src", "paragraph_pairs", "sentence_pairs", "dropped_untranslated",
                "dropped_too_short", "dropped_too_long", "dropped_length_ratio",
                "dropped_duplicate_source", "kept"):
        log(f"  {key:26s} {counts.get(key, 0)}")

    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    files = {}
    for split in SPLITS:
        for i, lang in enumerate(("en", "de")):
            name = f"{split}.{lang}.gz"
            files[name] = write_gz(out / name, [pair[1 + i] for pair in splits[split]])
        log(f"  {split}: {len(splits[split])} pairs")
    manifest = {
        "name": "ende_libreoffice",
        "description": "English-German LibreOffice help, paragraphs paired by (file, id), sentence-split, filtered",
        "license": "MPL-2.0",
        "copyright": "The Document Foundation and contributors",
        "languages": {"source": "en", "target": "de"},
        "script": "fastdec build-libreoffice-corpus",
        "script_version": SCRIPT_VERSION,
        "packages": packages,
        "seed": args.seed,
        "filters": lo.FILTER_DEFAULTS,
        "counts": counts,
        "splits": {split: len(splits[split]) for split in SPLITS},
        "files": files,
    }
    (out / "MANIFEST.json").write_text(json.dumps(manifest, indent=2, sort_keys=True,
                                                  ensure_ascii=False) + "\n", encoding="utf-8")
    lo_version = packages[0]["version"].split(":")[-1].split("-")[0]
    pkg_lines = "".join(f"    {p['package']} {p['version']} ({p['filename']},\n"
                        f"      sha256 {p['sha256']})\n" for p in packages)
    (out / "NOTICE").write_text(NOTICE.format(lo_version=lo_version, packages=pkg_lines,
                                              script_version=SCRIPT_VERSION, seed=args.seed),
                                encoding="utf-8")
    log(f"wrote {out}")
    return 0
