"""The papers' orderings checked on a run's tables (fastdec.claims.orderings): each check holds on tables that
show the ordering and fails on tables that break it."""
from types import SimpleNamespace

import pandas as pd

from fastdec.claims import orderings as O


def gad_table2(pp, gad, speed):
    rows = [{"label": "fairseq-beam5", "k": "-", "tokens_per_iteration": 1.0, "gad_tokens_per_iteration": None,
             "speedup_vs_beam": 1.0}]
    for k, a, b, s in zip((4, 8, 12, 16), pp, gad, speed):
        rows.append({"label": f"gad-k{k}-top3-tau1", "k": str(k), "tokens_per_iteration": a,
                     "gad_tokens_per_iteration": b, "speedup_vs_beam": s})
    return pd.DataFrame(rows)


def test_gad_orderings():
    good = gad_table2([2.0, 3.0, 3.4, 3.5], [1.8, 2.5, 3.0, 3.1], [1.2, 1.6, 1.5, 1.3])
    assert O.gadpp_accepts_more(good)["holds"] and O.speedup_peaks_in_the_middle(good)["holds"]
    assert "k=8: 3.00 vs 2.50" in O.gadpp_accepts_more(good)["ours"]
    bad = gad_table2([2.0, 2.4, 3.4, 3.5], [1.8, 2.5, 3.0, 3.1], [1.2, 1.3, 1.5, 1.6])
    assert not O.gadpp_accepts_more(bad)["holds"]  # k=8: GAD++ below GAD
    assert not O.speedup_peaks_in_the_middle(bad)["holds"]  # peak at the largest k
    assert "peak at k=16" in O.speedup_peaks_in_the_middle(bad)["ours"]


def blockwise_table1(reg, dis, ft, both):
    cols = {"Regular": reg, "Distillation": dis, "Fine Tuning": ft, "Both": both}
    rows = [{"k": 1, "Regular": "4.10 / 1.00", "Distillation": "4.50 / 1.00", "Fine Tuning": None, "Both": None}]
    for i, k in enumerate((2, 4, 8)):
        rows.append({"k": k, **{c: f"4.00 / {v[i]:.2f}" for c, v in cols.items()}, "paper Both": "26.58 / 1.88"})
    return pd.DataFrame(rows)


def test_blockwise_orderings():
    good = blockwise_table1([1.3, 1.5, 1.6], [1.4, 1.7, 1.8], [1.5, 2.0, 2.2], [1.6, 2.3, 2.6])
    assert O.distillation_raises_blocks(good)["holds"] and O.both_gives_largest_blocks(good)["holds"]
    bad = blockwise_table1([1.3, 1.8, 1.6], [1.4, 1.7, 1.8], [1.5, 2.4, 2.2], [1.6, 2.3, 2.6])
    assert not O.distillation_raises_blocks(bad)["holds"] and not O.both_gives_largest_blocks(bad)["holds"]
    assert O._block("4.68 / 2.45 (100%)") == 2.45 and O._block(None) is None


def test_iad_ordering():
    rows = [SimpleNamespace(edit_ratio=e, greedy_time=1.0, iad_time=t)
            for e, t in ((0.0, 0.2), (0.1, 0.3), (0.3, 0.5), (0.5, 0.9))]
    assert O.iad_speedup_falls_with_edits(rows)["holds"]
    flipped = [SimpleNamespace(edit_ratio=r.edit_ratio, greedy_time=1.0, iad_time=1.1 - r.iad_time) for r in rows]
    assert not O.iad_speedup_falls_with_edits(flipped)["holds"]
    assert not O.iad_speedup_falls_with_edits(rows[:2])["holds"]  # too few sentences to say


def test_failed_lists_the_claims_that_do_not_hold():
    df = pd.DataFrame([{"claim": "a", "paper": "", "ours": "", "holds": True},
                       {"claim": "b", "paper": "", "ours": "", "holds": False}], columns=O.COLUMNS)
    assert O.failed(df) == ["b"]
