"""Xia et al.'s claims (fastdec.claims.checks_xia): each holds on a table that shows it and fails on one that does
not; a table too small to say is not checkable."""
import pytest

from fastdec.claims import checks_xia as X
from fastdec.claims.claim import NotCheckable
from helpers.claim_tables import XIA_TOP3, XIA_TOP5, gad_table1, gad_table2, gad_table3, gad_table8


def test_iterations_order_nat_then_high_efficiency_then_high_quality_then_gad():
    ours, holds = X.iterations_order(gad_table1())
    assert holds and "NAT 1.60" in ours and "GAD 4.90" in ours
    assert not X.iterations_order(gad_table1(he=4.2))[1]  # high-efficiency GAD++ above high-quality
    assert not X.iterations_order(gad_table1(nat=5.0))[1]
    with pytest.raises(NotCheckable):
        X.iterations_order(gad_table1().query("label != 'nat-k25'"))


def test_vanilla_gad_is_identical_to_greedy():
    claim = X.CLAIMS[0]
    assert claim.row({X.T1: gad_table1()})["status"] == "holds"
    assert claim.row({X.T1: gad_table1(identical=97.5)})["status"] == "fails"


def test_table2_gadpp_accepts_more_and_peaks_in_the_middle():
    good = gad_table2([5.97, 6.74, 7.24, 7.56, 7.44], [4.0, 4.5, 5.0, 5.5, 5.4], [3.04, 3.47, 3.55, 3.79, 3.63])
    assert X.gadpp_accepts_more(good)[1]
    assert X.speedup_peaks_in_the_middle(good) == (
        "k=10: 3.04x, k=15: 3.47x, k=20: 3.55x, k=25: 3.79x, k=30: 3.63x; peak at k=25", True)
    assert X.tokens_peak_in_the_middle(good)[1]
    rising = gad_table2([5.97, 6.74, 7.24, 7.56, 7.60], [4.0, 4.5, 5.0, 7.6, 5.4], [3.0, 3.1, 3.2, 3.3, 3.4])
    assert not X.gadpp_accepts_more(rising)[1]  # k=25: GAD++ not above GAD
    assert not X.speedup_peaks_in_the_middle(rising)[1] and not X.tokens_peak_in_the_middle(rising)[1]
    with pytest.raises(NotCheckable):
        X.tokens_peak_in_the_middle(gad_table2([2.0, 3.0], [1.0, 2.0], [1.0, 1.1], ks=(2, 4)))


def test_table3_tokens_rise_with_beta_and_tau():
    assert X.tokens_rise_with_beta_and_tau(gad_table3(XIA_TOP3, XIA_TOP5))[1]
    flat_tau = [(7.56, 27.0)] * 5
    assert not X.tokens_rise_with_beta_and_tau(gad_table3(flat_tau, XIA_TOP5))[1]
    top5_below = [(t - 1.0, b) for t, b in XIA_TOP3]
    assert not X.tokens_rise_with_beta_and_tau(gad_table3(XIA_TOP3, top5_below))[1]


def test_table3_high_quality_bleu_and_over_loose_settings():
    paper = gad_table3(XIA_TOP3, XIA_TOP5)
    assert X.high_quality_bleu_at_least_greedy(paper) == ("top-3, tau=1: 27.02 vs greedy 26.62", True)
    assert not X.high_quality_bleu_at_least_greedy(gad_table3(XIA_TOP3, XIA_TOP5, greedy_bleu=27.5))[1]
    assert X.over_loose_lowers_bleu(paper) == ("top-5, tau=5: 26.64 vs the peak 27.02", True)
    no_drop = [(t, 27.02) for t, _ in XIA_TOP5]
    assert not X.over_loose_lowers_bleu(gad_table3(XIA_TOP3, no_drop))[1]


def test_table8_extra_memory_is_mostly_the_drafter():
    ours, holds = X.extra_memory_is_the_drafter(gad_table8())
    assert holds and ours == "gad-k25: 410.0 MB above greedy, drafter weights 250.0 MB"
    assert not X.extra_memory_is_the_drafter(gad_table8(gad=(1621.0, 250.0)))[1]  # drafter 50 of 410 MB
