"""config/wikilarge.yaml and config/nlpcc18.yaml (Ge et al. Table 4): offline dry runs with the real URLs, config
errors that name the key, the offline download message, and the corpus readers' errors on bad archives."""
import copy
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fastdec.tracks.gec import corpora
from fastdec.tracks.gec.data import GECDataError
from fastdec.tracks.gec.plan import check_gec
from helpers.table4_fixtures import nlpcc18_archives, paper_config, wikilarge_archives

REPO = Path(__file__).resolve().parents[2]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


def snakemake(workdir, cfg, *args):
    path = Path(workdir) / "cfg.yaml"
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True))
    return subprocess.run([SNAKEMAKE, "-s", str(REPO / "Snakefile"), "--directory", str(workdir), "--cores", "1",
                           *args, "--configfile", str(path)], cwd=REPO, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("name, scorer", [("wikilarge", "gec_sari"), ("nlpcc18", "gec_m2score")])
def test_paper_config_dry_runs_offline(tmp_path, name, scorer):
    r = snakemake(tmp_path, paper_config(name), "-n")
    assert r.returncode == 0, r.stderr[-3000:]
    out = r.stdout
    # two archives, one prepare job, one training job, ONE benchmark run of the four Table 4 methods, each scored
    assert out.count("rule fetch:") == 2 and out.count("rule gec_prepare_download:") == 1
    assert out.count("rule train:") == 1 and out.count("rule bench:") == 1 and out.count(f"rule {scorer}:") == 4
    assert f"results/{name}/gec/tables/gec_table4.csv" in out and "gec_table1.csv" not in out
    assert "gec_table12" not in out  # no CPU thread runs: Table 12 is English GEC's
    # on a cluster the training and the benchmark run get a GPU each (sbatch --gpus), nothing else does
    seen = set()
    for block in re.split(r"\n(?=(?:local)?rule \w+:\n)", out):
        rule = re.match(r"(?:local)?rule (\w+):\n", block)
        res = re.search(r"^\s*resources: (.*)$", block, re.M)
        if rule and res:
            gpu = dict(kv.split("=", 1) for kv in res.group(1).split(", ")).get("gpu", "0")
            assert gpu == ("1" if rule.group(1) in ("train", "bench") else "0"), (rule.group(1), res.group(1))
            seen.add(rule.group(1))
    assert {"train", "bench", "fetch", scorer} <= seen


def validate_gec(mutate, name="wikilarge"):
    from snakemake.utils import validate

    g = copy.deepcopy(paper_config(name)["gec"])
    mutate(g)
    validate(g, str(REPO / "fastdec/tracks/gec/schema.yaml"))
    check_gec(g)


@pytest.mark.parametrize("name, mutate, expected", [
    ("wikilarge", lambda g: g.update(metric="m2"), "gec.metric"),
    ("nlpcc18", lambda g: g.update(metric="sari"), "gec.metric: m2"),
    ("wikilarge", lambda g: g["data"]["wikilarge"]["train"].update(archive="dres"), "gec.data.wikilarge.train.archive"),
    ("nlpcc18", lambda g: g["data"].pop("nlpcc18"), "gec.data.nlpcc18 is missing"),
    ("nlpcc18", lambda g: g["data"].update(tokenisation="chars"), "chars"),
    ("wikilarge", lambda g: g["data"]["wikilarge"]["test"].update(refs=[]), "refs"),
])
def test_config_errors_name_the_key(name, mutate, expected):
    with pytest.raises(Exception) as e:
        validate_gec(mutate, name)
    assert expected in str(e.value)


def closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_offline_download_stops_naming_the_url_and_where_to_put_the_file(tmp_path):
    cfg = paper_config("wikilarge")
    url = f"http://127.0.0.1:{closed_port()}/louismartin/dress-data/raw/master/data-simplification.tar.bz2"
    cfg["gec"]["data"]["wikilarge"]["archives"]["dress"]["url"] = url
    cfg["device"] = "cpu"
    r = snakemake(tmp_path, cfg, "results/gec_downloads/dress")
    assert r.returncode != 0
    log = (tmp_path / "results/gec_downloads/logs/dress.log").read_text()
    assert f"could not download {url}" in log and "Are you offline?" in log
    assert "place it at results/gec_downloads/dress" in log
    assert not (tmp_path / "results/gec_downloads/dress").exists()


def archives_of(root, cfg, source):
    spec = cfg["gec"]["data"][source]
    return {name: str(root / a["url"].split("://", 1)[1].split("/", 1)[1]) for name, a in spec["archives"].items()}


def test_wrong_member_names_the_config_key_and_a_near_name(tmp_path):
    cfg = paper_config("wikilarge")
    wikilarge_archives(tmp_path, cfg, n_train=5, n_test=3)
    spec = copy.deepcopy(cfg["gec"]["data"]["wikilarge"])
    spec["train"]["src"] = "wikilarge/wiki.full.aner.ori.train.src"  # the archive's top folder left out
    with pytest.raises(GECDataError, match=r"gec.data.wikilarge.train: .*has no member .*did you mean "
                                           r"'data-simplification/wikilarge/wiki.full.aner.ori.train.src'"):
        corpora.prepare_wikilarge(spec, archives_of(tmp_path, cfg, "wikilarge"), tmp_path / "out")


def test_references_must_be_parallel_to_the_test_source(tmp_path):
    cfg = paper_config("wikilarge")
    wikilarge_archives(tmp_path, cfg, n_train=5, n_test=3)
    spec = copy.deepcopy(cfg["gec"]["data"]["wikilarge"])
    spec["test"]["refs"][3] = spec["train"]["src"]  # 5 lines, not 3
    spec["test"]["archive"] = "dress"  # (the member exists in the DRESS archive only)
    spec["test"]["src"] = spec["valid"]["src"]
    with pytest.raises(GECDataError, match="gec.data.wikilarge.test.refs"):
        corpora.prepare_wikilarge(spec, archives_of(tmp_path, cfg, "wikilarge"), tmp_path / "out")


def test_nlpcc18_training_lines():
    per_line, bad = corpora.nlpcc18_pairs(["1\t0\t我爱你", "2\t2\t他们去\t她们去\t他们去了", "3\tx\t坏", "4\t1\t缺"],
                                          "data.train")
    # no correction: the sentence is its own target; two corrections: two pairs; a non-number count and a count
    # larger than the corrections given are malformed (line numbers 3 and 4)
    assert per_line == [[("我爱你", "我爱你")], [("他们去", "她们去"), ("他们去", "他们去了")]] and bad == [3, 4]


def test_nlpcc18_wrong_training_member_is_an_error(tmp_path):
    cfg = paper_config("nlpcc18")
    nlpcc18_archives(tmp_path, cfg, n_train=30, n_test=3)
    spec = copy.deepcopy(cfg["gec"]["data"]["nlpcc18"])
    spec["train"] = dict(spec["test"])  # the gold M2 is not the training file
    with pytest.raises(GECDataError, match="gec.data.nlpcc18.train: .* lines .* are not 'id<TAB>n<TAB>source"):
        corpora.prepare_nlpcc18(spec, archives_of(tmp_path, cfg, "nlpcc18"), tmp_path / "out")
    spec = copy.deepcopy(cfg["gec"]["data"]["nlpcc18"])
    with pytest.raises(GECDataError, match="valid_size: 5000 but the training file has 30"):
        corpora.prepare_nlpcc18(spec, archives_of(tmp_path, cfg, "nlpcc18"), tmp_path / "out")
