"""The HTML report: delta columns only where a paper column has a counterpart of ours, figures inline, several
experiments on one page through `fastdec report`."""
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from fastdec.claims.report import build_html
from fastdec.report.html import counterpart, read_items, with_deltas, write_items

REPO = Path(__file__).resolve().parents[1]


def test_deltas_pair_each_paper_column_with_ours():
    df = pd.DataFrame({"label": ["a", "b"], "bleu": [20.0, None], "paper_bleu": [28.0, 27.5],
                       "speedup_vs_beam": [2.0, 3.0], "paper_speed": [3.0, None], "paper_note": ["x", "y"],
                       "speedup_vs_greedy": [1.5, 1.0], "paper_speedup": [3.31, 1.72]})
    out = with_deltas(df, "gad_table1")
    assert list(out.columns) == ["label", "bleu", "paper_bleu", "delta bleu", "speedup_vs_beam", "paper_speed",
                                 "delta speed", "paper_note", "speedup_vs_greedy", "paper_speedup", "delta speedup"]
    assert out["delta bleu"].iloc[0] == -8.0 and pd.isna(out["delta bleu"].iloc[1])
    assert out["delta speed"].iloc[0] == -1.0 and out["delta speedup"].tolist() == [-1.31, 1.28]
    # Stern et al. report speedups over greedy decoding
    assert counterpart(df, "paper_speedup", "blockwise_table4") == "speedup_vs_greedy"
    assert counterpart(df, "paper_note", "gad_table1") is None
    bw = with_deltas(df[["label", "speedup_vs_greedy", "paper_speedup"]], "blockwise_table4")
    assert bw["delta speedup"].tolist() == [-1.81, -0.72]


def test_page_has_figures_inline_and_signatures(tmp_path):
    results = tmp_path / "results/demo"
    (results / "t").mkdir(parents=True)
    pd.DataFrame({"label": ["greedy"], "bleu": [5.0], "paper_bleu": [28.73],
                  "signature": ["nrefs:1|case:mixed|tok:13a"], "source": ["ours"]}).to_csv(results / "t/gad_table1.csv",
                                                                                         index=False)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.plot([1, 2]); plt.savefig(results / "t/fig.png"); plt.close()
    items = [str(results / "t/gad_table1.csv"), str(results / "t/fig.png")]
    page = build_html({"demo": items}, str(REPO / "workflow/report"))
    assert "data:image/png;base64," in page and "delta bleu" in page and "-23.73" in page
    assert "nrefs:1|case:mixed|tok:13a" in page and "Coverage of the papers" in page
    assert "GAD paper, Table 1" in page  # the caption's title
    write_items(str(results), items)
    assert json.loads((results / "report/items.json").read_text()) == ["t/gad_table1.csv", "t/fig.png"]
    assert read_items(str(results)) == items
    out = tmp_path / "both.html"
    other = tmp_path / "results/other"
    write_items(str(other), [])
    r = subprocess.run([sys.executable, "-m", "fastdec", "report", str(results), str(other), "--output", str(out)],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr
    assert "Experiment <code>demo</code>" in out.read_text() and "Experiment <code>other</code>" in out.read_text()
    (results / "t/fig.png").unlink()
    with pytest.raises(ValueError, match="gone"):
        read_items(str(results))
    r = subprocess.run([sys.executable, "-m", "fastdec", "report", str(tmp_path / "nope"), "--output", str(out)],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2 and "items.json not found" in r.stderr
