"""Paper-scale download rules, run for real against a local HTTP server on 127.0.0.1 that serves small archives with
the layout of the real WMT14 archives (the machine has no internet; the rules and URLs are otherwise the real ones)."""
import functools
import http.server
import io
import socket
import subprocess
import sys
import tarfile
import threading
import urllib.parse
from pathlib import Path

import pytest
import yaml

from fastdec.data.download import DownloadError, download, sgm_to_lines

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


def make_tgz(path: Path, members: dict[str, str]):
    with tarfile.open(path, "w:gz") as tar:
        for name, text in members.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def sgm(lines, kind):
    segs = "\n".join(f'<seg id="{i}">{t}</seg>' for i, t in enumerate(lines, 1))
    return f'<{kind} setid="newstest2014" srclang="en">\n<doc docid="x">\n{segs}\n</doc>\n</{kind}>\n'


EN = ["The cat sits on the mat .", "I like green tea .", "Where is the station ?"]
DE = ["Die Katze sitzt auf der Matte .", "Ich mag grünen Tee .", "Wo ist der Bahnhof ?"]


@pytest.fixture(scope="module")
def wmt_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("www")
    two = lambda xs: "\n".join(xs) + "\n"
    # each archive at its real URL's path (two real archives are both called dev.tgz)
    (root / "wmt13").mkdir()
    (root / "wmt14").mkdir()
    (root / "wmt16/translation-task").mkdir(parents=True)
    make_tgz(root / "wmt13/training-parallel-europarl-v7.tgz", {
        "training/europarl-v7.de-en.en": two(EN), "training/europarl-v7.de-en.de": two(DE)})
    make_tgz(root / "wmt13/training-parallel-commoncrawl.tgz", {
        "commoncrawl.de-en.en": two(EN[:2]), "commoncrawl.de-en.de": two(DE[:2])})
    make_tgz(root / "wmt14/training-parallel-nc-v9.tgz", {
        "training/news-commentary-v9.de-en.en": two(EN[1:]), "training/news-commentary-v9.de-en.de": two(DE[1:])})
    make_tgz(root / "wmt14/dev.tgz", {"dev/newstest2013.en": two(EN), "dev/newstest2013.de": two(DE)})
    # the real test-full.tgz holds both directions' source and reference files
    make_tgz(root / "wmt14/test-full.tgz", {"test-full/newstest2014-deen-src.en.sgm": sgm(EN, "srcset"),
                                            "test-full/newstest2014-deen-ref.de.sgm": sgm(DE, "refset"),
                                            "test-full/newstest2014-deen-src.de.sgm": sgm(DE, "srcset"),
                                            "test-full/newstest2014-deen-ref.en.sgm": sgm(EN, "refset")})
    # WMT16's dev archive: newstest2015 (the students' final test set) among the earlier test sets
    make_tgz(root / "wmt16/translation-task/dev.tgz", {
        "dev/newstest2015-ende-src.en.sgm": sgm(EN[::-1], "srcset"),
        "dev/newstest2015-ende-ref.de.sgm": sgm(DE[::-1], "refset"),
        "dev/newstest2014-deen-src.de.sgm": sgm(DE, "srcset")})
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def local_config(tmp_path, base_url, name="wmt14_ende"):
    cfg = yaml.safe_load((REPO / f"config/{name}.yaml").read_text())
    for spec in cfg["data"]["download"]["archives"].values():
        spec["url"] = base_url + urllib.parse.urlparse(spec["url"]).path
    cfg["experiment"] = "wmt14_fixture"
    # the fetch and prepare rules do not depend on the device; a CUDA config stops at start on a machine without CUDA
    cfg["device"] = "cpu"
    path = tmp_path / "wmt14_fixture.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.mark.parametrize("name", ["wmt14_ende", "wmt14_deen"])
def test_download_rules_fetch_and_extract_real_layout(tmp_path, wmt_server, name):
    cfg = local_config(tmp_path, wmt_server, name)
    splits = ("train", "valid", "test") + (("final",) if name == "wmt14_ende" else ())  # final: newstest2015
    targets = [f"results/wmt14_fixture/data/raw/{s}.{l}" for s in splits for l in ("en", "de")]
    r = subprocess.run([SNAKEMAKE, "-s", str(REPO / "Snakefile"), "--cores", "2", "--directory", str(tmp_path),
                        *targets, "--configfile", str(cfg)], cwd=REPO, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out = tmp_path / "results/wmt14_fixture/data/raw"
    assert (out / "train.en").read_text().splitlines() == EN + EN[:2] + EN[1:]
    assert (out / "test.de").read_text().splitlines() == DE  # segments out of the .sgm (source or reference)
    assert (out / "test.en").read_text().splitlines() == EN
    assert (out / "valid.en").read_text().splitlines() == EN
    assert (tmp_path / "results/downloads/test-full.tgz").exists()
    if name == "wmt14_ende":
        assert (out / "final.en").read_text().splitlines() == EN[::-1]
        assert (out / "final.de").read_text().splitlines() == DE[::-1]


def closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_offline_download_fails_with_clear_message(tmp_path):
    url = f"http://127.0.0.1:{closed_port()}/dev.tgz"
    with pytest.raises(DownloadError, match=r"could not download .*Are you offline\? .*place it at"):
        download(url, tmp_path / "dev.tgz", timeout=5)
    assert not (tmp_path / "dev.tgz").exists() and not (tmp_path / "dev.tgz.part").exists()


def test_checksum_mismatch_is_an_error(tmp_path, wmt_server):
    with pytest.raises(DownloadError, match="sha256"):
        download(wmt_server + "/wmt14/dev.tgz", tmp_path / "dev.tgz", sha256="0" * 64)


def test_sgm_segments():
    assert sgm_to_lines(sgm(["a &amp; b", "c"], "refset")) == ["a & b", "c"]
