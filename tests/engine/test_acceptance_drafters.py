"""Unit tests of the acceptance rules, parameter validation and the IAD drafter's suffix matching."""
import math

import pytest
import torch

from fastdec.engine import (InputCopyDrafter, NoDrafter, accept_top1, accept_top_beta, accept_top_k,
                            make_acceptance, make_drafter, with_min_block)
from fastdec.engine.drafters import available_drafters, register_drafter
from fastdec.engine.loop import DecodeState

NEG = -math.inf


def lp_rows(*rows):
    """Log-prob rows from lists of (token, logp) over a vocabulary of 6 (others -inf)."""
    out = torch.full((len(rows), 6), NEG, dtype=torch.float64)
    for i, row in enumerate(rows):
        for t, v in row:
            out[i, t] = v
    return out


def test_accept_top1():
    assert accept_top1([], [4]) == 0
    assert accept_top1([4, 5, 6], [4, 5, 6, 2]) == 3
    assert accept_top1([4, 5, 6], [4, 9, 6, 2]) == 1
    assert accept_top1([7], [4, 2]) == 0


def test_accept_top_beta_eq_8_and_9():
    # row 0: top1 = 4 (-0.1), 2nd = 5 (-1.0), 3rd = 3 (-3.0); row 1: top1 = 5; row 2: bonus row
    lp = lp_rows([(4, -0.1), (5, -1.0), (3, -3.0)], [(5, -0.2), (4, -2.0)], [(2, 0.0)])
    top1 = [4, 5, 2]
    assert accept_top_beta(2, 1.0)([5, 5], top1, lp) == 2           # rank 2, gap 0.9 <= 1
    assert accept_top_beta(2, 0.5)([5, 5], top1, lp) == 0           # gap 0.9 > 0.5
    assert accept_top_beta(2, 10.0)([3, 5], top1, lp) == 0          # rank 3 > beta
    assert accept_top_beta(3, 10.0)([3, 5], top1, lp) == 2
    assert accept_top_beta(3, 10.0)([3, 4], top1, lp) == 2          # row 1: token 4 rank 2, gap 1.8
    assert accept_top_beta(3, 1.0)([3, 4], top1, lp) == 0           # row 0: gap 2.9 > 1
    assert accept_top_beta(1, 100.0)([5, 5], top1, lp) == 0         # beta = 1 == top1
    assert accept_top_beta(1, 0.0)([4, 5], top1, lp) == 2
    assert accept_top_beta(5, math.inf)([1, 5], top1, lp) == 0      # -inf (e.g. padding) never accepted


def test_accept_top_beta_ties_with_beta_1_stay_greedy():
    lp = lp_rows([(4, -0.5), (5, -0.5)], [(2, 0.0)])
    assert accept_top_beta(1, 0.0)([5], [4, 2], lp) == 0
    assert accept_top_beta(2, 0.0)([5], [4, 2], lp) == 1


def test_accept_top_k_and_min_block():
    lp = lp_rows([(4, -0.1), (5, -1.0), (3, -3.0)], [(5, -0.2), (4, -9.0)], [(2, 0.0)])
    top1 = [4, 5, 2]
    assert accept_top_k(2)([5, 4], top1, lp) == 2
    assert accept_top_k(2)([3, 4], top1, lp) == 0
    assert accept_top_k(1)([5, 4], top1, lp) == 0
    free = torch.zeros(4, 6)  # every token allowed
    assert with_min_block(accept_top1, 3)([0, 1, 3], [4, 5, 2, 2], free) == 2
    assert with_min_block(accept_top1, 3)([0], [4, 5], free) == 1
    assert with_min_block(accept_top1, 1)([0], [4, 5], None) == 0
    assert with_min_block(accept_top1, 3)([4, 5, 6, 7], [4, 5, 6, 7, 2], None) == 4


def test_min_block_never_forces_a_masked_token():
    """ℓ forces draft tokens only while the verifier's mask allows them (-inf rows: EOS at step 0, max length)."""
    lp = lp_rows([(4, -0.1), (5, -1.0)], [(2, -0.3)], [(2, 0.0)])  # row 1: only EOS allowed (max length)
    rule = with_min_block(accept_top1, 3)
    assert rule.needs_log_probs
    assert rule([5, 4], [4, 2, 2], lp) == 1          # 5 allowed (forced), 4 is -inf at row 1: not forced
    assert rule([1, 4], [4, 2, 2], lp) == 0          # padding-like -inf token is never forced
    assert rule([5, 2], [4, 2, 2], lp) == 2
    with pytest.raises(ValueError, match="log-probabilities"):
        rule([5, 4], [4, 2, 2], None)
    assert with_min_block(accept_top1, 3)([4, 5], [4, 5, 2], None) == 2  # nothing to force: no log-probs needed


@pytest.mark.parametrize("bad", [
    lambda: accept_top_beta(0, 1.0), lambda: accept_top_beta(-2, 1.0), lambda: accept_top_beta(2, -0.1),
    lambda: accept_top_beta(2, float("nan")), lambda: accept_top_beta(2.5, 1.0), lambda: accept_top_beta(True, 1),
    lambda: accept_top_beta(2, "x"), lambda: accept_top_k(0), lambda: with_min_block(accept_top1, 0),
    lambda: make_acceptance("nope"), lambda: make_acceptance("top-k", k=0),
    lambda: make_drafter("no-such-drafter"), lambda: make_drafter("iad", bogus=1),
    lambda: InputCopyDrafter(max_ngram=0), lambda: InputCopyDrafter(max_ngram=2, min_ngram=3),
])
def test_bad_parameters_raise_value_error(bad):
    with pytest.raises(ValueError):
        bad()


def test_make_acceptance_and_registry():
    assert make_acceptance("top1") is accept_top1
    assert isinstance(make_acceptance("top-beta", beta=3, tau=1.0), accept_top_beta)
    assert isinstance(make_acceptance("top-k", k=2, min_block_size=2), with_min_block)
    assert {"greedy", "iad", "random"} <= set(available_drafters())
    assert isinstance(make_drafter("greedy"), NoDrafter)
    assert make_drafter("iad", max_ngram=2).max_ngram == 2
    seen = {}
    register_drafter("spy-test", lambda context=None, **kw: seen.update(ctx=context, kw=kw) or NoDrafter())
    make_drafter("SPY-TEST", context={"x": 1}, a=2)
    assert seen == {"ctx": {"x": 1}, "kw": {"a": 2}}


def state(src, out, max_draft=100):
    return DecodeState(src_tokens=torch.tensor(src), src_list=list(src), prefix=[2] + list(out), encoder_out={},
                       eos=2, pad=1, unk=3, vocab_size=50, max_len=200, max_draft=max_draft)


def propose(src, out, **kw):
    dr = InputCopyDrafter(**{k: v for k, v in kw.items() if k != "max_draft"})
    st = state(src, out, kw.get("max_draft", 100))
    dr.start(st)
    return dr.propose(st)


def test_iad_initial_draft_is_the_source():
    assert propose([10, 11, 12, 2], []) == [10, 11, 12, 2]
    assert propose([2], []) == [2]                          # empty source: draft just the EOS
    assert propose([10, 11, 12, 2], [], max_draft=2) == [10, 11]


def test_iad_suffix_matching():
    src = [10, 11, 12, 13, 11, 12, 14, 2]
    assert propose(src, [5, 10]) == [11, 12, 13, 11, 12, 14, 2]     # unique 1-gram "10"
    assert propose(src, [5, 13]) == [11, 12, 14, 2]                  # unique 1-gram "13"
    assert propose(src, [5, 11, 12]) == []                           # "11 12" twice, "5 11 12" absent
    assert propose(src, [13, 11, 12]) == [14, 2]                     # longest: unique 3-gram
    assert propose(src, [10, 11, 12]) == [13, 11, 12, 14, 2]         # "10 11 12" unique
    assert propose(src, [99]) == []                                  # no match: re-decode one token
    assert propose(src, [10, 11]) == [12, 13, 11, 12, 14, 2]         # BOS-anchored prefix matches x_0..
    assert propose(src, [12]) == []                                  # ambiguous 1-gram
    assert propose(src, [14]) == [2]
    assert propose(src, [5, 11, 12], max_ngram=1) == []
    assert propose(src, [13, 11, 12], max_ngram=2) == []             # only "11 12" considered: ambiguous


def test_iad_bos_matches_only_at_start():
    # BOS shares EOS's id in fairseq; it must not match the source's trailing EOS
    src = [10, 11, 2]
    assert propose(src, []) == [10, 11, 2]
    assert propose(src, [10]) == [11, 2]
