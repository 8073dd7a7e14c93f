"""End to end, GEC track only: config/smoke.yaml's `gec:` section (real UA-GEC slice, a real tiny fairseq model,
`fastdec bench`) in a temporary directory; then the tables, the figure and the report are checked.
About a minute on an idle 2-core machine."""
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from fastdec.bench.results import read_run

REPO = Path(__file__).resolve().parents[2]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
pytestmark = pytest.mark.slow
pytest.importorskip("ua_gec")


@pytest.fixture(scope="module")
def gec_run(tmp_path_factory):
    work = tmp_path_factory.mktemp("gec_smoke")
    cfg = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
    cfg = {k: cfg[k] for k in ("experiment", "device", "gec")}
    cfg["tracks"] = {"mt_at": False, "gec_iad": True, "gad": False, "blockwise": False}
    cfg["gec"]["benchmark"]["cpu_threads"] = [1, 2]   # Table 12 with a second run (10 sentences at 2 threads)
    cfg["gec"]["benchmark"]["cpu_sentences"] = 10
    path = work / "gec_smoke.yaml"
    path.write_text(yaml.safe_dump(cfg))
    r = subprocess.run([SNAKEMAKE, "-s", str(REPO / "Snakefile"), "--directory", str(work), "--cores", "2",
                        "--configfile", str(path)], cwd=REPO, capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stderr[-4000:]
    return work / f"results/{cfg['experiment']}"


def test_table1_iad_is_lossless_and_scored(gec_run):
    df = pd.read_csv(gec_run / "gec/tables/gec_table1.csv")
    df = df[df["source"] == "ours"].set_index("method")
    assert list(df.index) == ["fairseq-beam5", "fairseq-greedy", "greedy", "iad", "greedy-fast", "iad-fast",
                              "iad-cost", "iad-fast-cost", "ct2-greedy", "ct2-beam5", "iad-draft4"]
    assert df.loc["iad-cost", "system"] == "engine IAD, cost-aware draft length"
    assert df.loc["iad-cost", "identical_to_greedy_pct"] == 100 and pd.isna(df.loc["iad-cost", "paper_speedup"])
    # the fast verifier (benchmark.backends): IAD on it is lossless against its own greedy (the table would refuse it
    # otherwise: strict_identical), so it matches the reference's greedy output exactly where greedy-fast does
    assert df.loc["iad-fast", "system"] == "engine IAD (fast backend)" and pd.isna(df.loc["iad-fast", "paper_speedup"])
    assert df.loc["iad-fast", "identical_to_greedy_pct"] == df.loc["greedy-fast", "identical_to_greedy_pct"]
    print("greedy-fast identical to engine greedy:", df.loc["greedy-fast", "identical_to_greedy_pct"], "%")
    # CTranslate2 on the same weights (converted by the workflow): a peer, scored like every system
    assert df.loc["ct2-greedy", "system"] == "CTranslate2 greedy (float32)" and df.loc["ct2-beam5", "F0.5"] >= 0
    print("ct2-greedy identical to engine greedy:", df.loc["ct2-greedy", "identical_to_greedy_pct"], "%")
    assert df.loc["ct2-greedy", "identical_to_greedy_pct"] >= 90.0
    assert df.loc["iad-draft4", "identical_to_greedy_pct"] == 100.0  # a draft cap stays lossless
    assert df.loc["iad-draft4", "tokens_per_iteration"] <= 5.0       # at most 4 drafted + 1 verifier token
    n = json.loads((gec_run / "gec/data/raw/report.json").read_text())
    assert n["test"]["sentences"] == 100 and n["train"]["kept"] == 1500
    assert (df["n_sentences"] == 40).all()
    assert df.loc["iad", "identical_to_greedy_pct"] == 100.0
    assert df.loc["fairseq-greedy", "identical_to_greedy_pct"] == 100.0  # engine greedy == fairseq beam 1
    assert df.loc["fairseq-beam5", "speedup_vs_beam"] == 1.0 and (df["total_time_s"] > 0).all()
    for col in ("P", "R", "F0.5", "mean_iterations"):
        assert df[col].notna().all(), col
    # IAD outputs equal greedy's, so their M2 scores are equal too
    assert df.loc["iad", ["P", "R", "F0.5"]].tolist() == df.loc["greedy", ["P", "R", "F0.5"]].tolist()
    assert df.loc["iad", "paper_speedup"] == 8.1 and df.loc["fairseq-beam5", "paper_F0.5"] == 38.5


def test_table12_table2_figure_and_report(gec_run):
    t12 = pd.read_csv(gec_run / "gec/tables/gec_table12.csv").set_index("threads")
    assert list(t12.index) == [8, 2, 1] and t12.loc[2, "sentences"] == 10 and t12.loc[1, "iad_speedup"] > 0
    t2 = pd.read_csv(gec_run / "gec/tables/gec_table2.csv")
    assert len(t2) == 7 and t2["output"].str.contains("₀").all()
    assert (gec_run / "gec/figures/gec_figure5.png").read_bytes()[:4] == b"\x89PNG"
    recs = read_run(str(gec_run / "gec/bench/cpu-t1-n40")).records()
    assert len(recs["iad"]) == 40 and [r.tokens for r in recs["iad"]] == [r.tokens for r in recs["greedy"]]
    report = (gec_run / "report/report.md").read_text()
    for title in ("IAD paper, Table 1", "IAD paper, Figure 5", "IAD paper, Table 2", "IAD paper, Table 12"):
        assert title in report
    assert "gec_figure5.png" in report and "38.36" in report
    assert len(list((gec_run / "benchmarks").rglob("*.tsv"))) >= 15  # every job's time and memory
