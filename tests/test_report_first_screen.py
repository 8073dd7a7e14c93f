"""The report opens with what a reader came for: per paper a summary card (headline figures, claims with the failed
ones spelled out, lossless audit, hardware), then the figures, then the tables, the coverage last; displayed text has
no BPE markers and a wide table keeps its extra columns behind <details>."""
from pathlib import Path

import pandas as pd

from fastdec.claims import orderings
from fastdec.claims.claim import run_claims
from fastdec.claims.report import build_html, build_report
from fastdec.report.display import debpe, key_columns
from helpers.claim_tables import gad_table1

REPO = Path(__file__).resolve().parents[1]
FAILED = "mean iterations: NAT < GAD++ high-efficiency < GAD++ high-quality < GAD"


def _run(tmp_path):
    """A run folder with the claims (one failing), a wide GAD Table 1 with BPE'd text, and a figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    R = tmp_path / "results/demo"
    for d in ("tables", "gad/tables", "gad/figures"):
        (R / d).mkdir(parents=True)
    t1 = gad_table1(he=4.5).assign(paper_bleu=28.73, source="ours", note="Gut@@ acht über@@ prüft",
                                   **{f"extra_{i}": float(i) for i in range(12)})
    t1.to_csv(R / "gad/tables/gad_table1.csv", index=False)
    run_claims(orderings.CLAIMS, {"gad_table1": t1}).to_csv(R / "tables/orderings.csv", index=False)
    plt.plot([1, 2]); plt.savefig(R / "gad/figures/gad_figure4_speedup.png"); plt.close()
    return [str(R / "tables/orderings.csv"), str(R / "gad/tables/gad_table1.csv"),
            str(R / "gad/figures/gad_figure4_speedup.png")]


def test_html_opens_with_the_summary_then_figures_then_tables_coverage_last(tmp_path):
    page = build_html({"demo": _run(tmp_path)}, str(REPO / "workflow/report"))
    at = {what: page.index(marker) for what, marker in (
        ("summary", "class='cards'"), ("failed", f"✗ {FAILED.replace('<', '&lt;')}"), ("figures", "<h2>Figures"),
        ("tables", "<h2>Tables"), ("coverage", "Coverage of the papers"))}
    assert at["summary"] < at["failed"] < at["figures"] < at["tables"] < at["coverage"]
    # the failed claim with the paper's statement and ours, before any table of the run
    card = page[at["failed"]:at["figures"]]
    assert "Xia Table 1 (k=25): NAT 1.6" in card and "k=25: NAT 1.60, GAD++ (top-5, tau=3) 4.50" in card
    assert "Lossless audit" in card and "gad-k25: 100.0%" in card
    assert "not run" in page[:at["figures"]]  # the claims whose tables this run lacks
    assert page.index("<details><summary>Coverage") > at["tables"]


def test_text_is_de_bped_and_a_wide_tables_extra_columns_are_behind_details(tmp_path):
    page = build_html({"demo": _run(tmp_path)}, str(REPO / "workflow/report"))
    assert "Gutacht überprüft" in page and "@@" not in page
    table = page[page.index("<h2>Tables"):]
    first_details = table.index("<details><summary>all ")
    assert "extra_11" not in table[:first_details] and "extra_11" in table[first_details:]
    assert table.index("paper_bleu") < first_details  # the paper's column stays beside ours
    assert debpe("ĠThe Ġcat") == " The  cat" and debpe("a@@ b@@") == "ab"


def test_key_columns_keep_ids_and_paper_pairs_within_the_cap():
    df = pd.DataFrame({"label": ["a"], "bleu": [1.0], "paper_bleu": [2.0], "delta bleu": [-1.0],
                       **{f"c{i}": [float(i)] for i in range(12)}})
    keep = key_columns(df, "gad_table1", limit=6)
    assert keep[:4] == ["label", "bleu", "paper_bleu", "delta bleu"] and len(keep) == 6


def test_markdown_has_the_same_order(tmp_path):
    text = build_report("demo", _run(tmp_path), str(REPO / "workflow/report"), out_dir=str(tmp_path))
    order = [text.index(s) for s in ("## Summary", f"FAILS: {FAILED}", "![", "| label |", "## Coverage of the papers")]
    assert order == sorted(order) and "Gutacht" in text and "@@" not in text


def test_headline_takes_the_papers_other_setting_and_says_so():
    """Our k = 10 row has no same-setting paper figure (paper_bleu empty): the card shows the paper's k = 25 figure
    and names its setting; with a same-setting figure, that one wins."""
    from fastdec.claims.checks_xia import HEADLINE
    from fastdec.claims.summary import figure_row

    bleu = next(f for f in HEADLINE if f.what == "GAD BLEU")
    t1 = gad_table1(he=4.5).assign(paper_bleu=float("nan"), paper_k25_bleu=28.73)
    row = figure_row(bleu, {"gad_table1": t1})
    assert row["paper"] == 28.73 and "k = 25" in row["source"]
    row = figure_row(bleu, {"gad_table1": t1.assign(paper_bleu=27.0)})
    assert row["paper"] == 27.0 and "k = 25" not in row["source"]


def test_a_paper_s_card_answers_whether_cost_aware_drafting_kept_greedy_s_speed(tmp_path):
    items = _run(tmp_path)
    policy = Path(items[1]).parent / "gad_policy.csv"
    pd.DataFrame({"run": ["test", "batch"], "method": ["gad-k10", "gad-k10"], "batch_size": [1, 8],
                  "exact": [True, True], "cost_x_greedy": [0.99, 0.95], "cost_vs_fixed": [4.0, 7.0],
                  "identical_to_greedy_pct": [100.0, 100.0]}).to_csv(policy, index=False)
    page = build_html({"demo": items + [str(policy)]}, str(REPO / "workflow/report"))
    card = page[page.index("class='cards'"):page.index("<h2>Figures")]
    assert ("Cost-aware draft lengths (beyond the paper)</b>: 1 of 2 exact cost-aware rows at 0.97x greedy" in card
            and "slowest 0.95x: gad-k10 at batch 8, batch" in card and "(table: gad_policy)" in card)
    text = build_report("demo", items + [str(policy)], str(REPO / "workflow/report"), out_dir=str(tmp_path))
    assert "**Cost-aware draft lengths (beyond the paper)**: 1 of 2" in text.split("## Coverage")[0]
    assert "Cost-aware draft lengths" not in build_report("demo", items, str(REPO / "workflow/report"),
                                                         out_dir=str(tmp_path)).split("## Coverage")[0]
