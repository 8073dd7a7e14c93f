"""Unit tests of the acceptance rules, parameter validation and the IAD drafter's suffix matching."""
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from helpers.properties import property_settings

from fastdec.engine import (InputCopyDrafter, NoDrafter, accept_top1, accept_top_beta, accept_top_k,
                            make_acceptance, make_drafter, with_min_block)
from fastdec.engine.drafters import DRAFTERS, available_drafters, drafter_factory, register_drafter
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


@st.composite
def scored_draft(draw):
    """A draft and the verifier's masked log-probability rows ``[k + 1, V]``: few distinct values (ties), -inf
    entries (masked tokens), at least one finite entry per row."""
    vocab, k = draw(st.integers(2, 6)), draw(st.integers(0, 20))
    values = st.sampled_from([NEG, -4.0, -2.5, -1.0, -0.5, -0.25, 0.0])
    rows = [draw(st.lists(values, min_size=vocab, max_size=vocab).filter(lambda r: max(r) > NEG)) for _ in range(k + 1)]
    lp = torch.tensor(rows, dtype=torch.float64)
    top1 = lp.argmax(-1).tolist()
    # mostly the verifier's own tokens, so that long drafts are accepted across the exact rule's lazy chunks
    draft = [top1[i] if draw(st.integers(0, 5)) else draw(st.integers(0, vocab - 1)) for i in range(k)]
    return draft, top1, lp


def reference_accept(draft, top1, lp, rank, tau=math.inf, min_block=1):
    """Straight from the definitions: token i is accepted when it is the verifier's top-1, or (rank > 1) when it is
    finite, fewer than ``rank`` tokens score strictly higher (Eq. 8 with ties) and its gap to the best is <= tau
    (Eq. 9); then up to ``min_block - 1`` leading tokens are forced while their log-probability is finite."""
    def ok(i, t):
        row = lp[i]
        return t == top1[i] or (rank > 1 and row[t] > NEG and int((row > row[t]).sum()) < rank
                                and float(row.max() - row[t]) <= tau)
    a = next((i for i, t in enumerate(draft) if not ok(i, t)), len(draft))
    forced = next((i for i in range(min(min_block - 1, len(draft))) if lp[i, draft[i]] == NEG),
                  min(min_block - 1, len(draft)))
    return max(a, forced)


@property_settings(20 / 3)
@given(c=scored_draft(), rank=st.integers(1, 4), tau=st.sampled_from([0.0, 0.3, 1.0, 2.0, math.inf]),
       min_block=st.integers(1, 4))
def test_relaxed_rules_equal_a_full_recompute(c, rank, tau, min_block):
    """GAD++ (top-β/τ), top-k and the minimum block size against the reference, called directly and through the
    loop's entry point (projection of the rows on demand)."""
    draft, top1, lp = c
    project = lambda start, end: lp[start:end]  # noqa: E731
    for rule, ref in ((accept_top_beta(rank, tau), reference_accept(draft, top1, lp, rank, tau)),
                      (accept_top_k(rank), reference_accept(draft, top1, lp, rank)),
                      (with_min_block(accept_top_beta(rank, tau), min_block),
                       reference_accept(draft, top1, lp, rank, tau, min_block)),
                      (with_min_block(accept_top1, min_block), reference_accept(draft, top1, lp, 1, 0, min_block))):
        assert rule(draft, top1, lp) == ref, rule
        a, rows_top1, _ = rule.accept_from_hidden(list(draft), project)
        assert a == ref and rows_top1[: a + 1] == top1[: a + 1], rule


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
    assert {"greedy", "iad"} <= set(available_drafters()) and "random" not in available_drafters()
    assert isinstance(make_drafter("greedy"), NoDrafter)
    assert make_drafter("iad", max_ngram=2).max_ngram == 2
    seen = {}
    register_drafter("spy-test", lambda context=None, **kw: seen.update(ctx=context, kw=kw) or NoDrafter())
    make_drafter("SPY-TEST", context={"x": 1}, a=2)
    assert seen == {"ctx": {"x": 1}, "kw": {"a": 2}}


def test_every_named_drafter_resolves_to_its_factory():
    assert {"greedy", "iad", "gad", "blockwise"} <= set(DRAFTERS)
    for name, target in DRAFTERS.items():
        module, attr = target.split(":")
        factory = drafter_factory(name.upper())
        assert callable(factory) and (factory.__module__, factory.__name__) == (module, attr), name


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


def test_iad_initial_draft_whatever_min_ngram():
    """The BOS-sentinel match gives the initial aggressive decoding also when 1-grams are not matched."""
    src = [10, 11, 12, 13, 2]
    for min_ngram in (1, 2, 3):
        assert propose(src, [], min_ngram=min_ngram, max_ngram=3) == src
    assert propose(src, [10], min_ngram=2) == [11, 12, 13, 2]      # BOS-anchored 2-gram
    assert propose(src, [5, 12], min_ngram=2) == []                 # a lone 1-gram is below min_ngram


def test_iad_bos_matches_only_at_start():
    # BOS shares EOS's id in fairseq; it must not match the source's trailing EOS
    src = [10, 11, 2]
    assert propose(src, []) == [10, 11, 2]
    assert propose(src, [10]) == [11, 2]


def _match_by_index(src, out, max_ngram, min_ngram):
    """The suffix match as an n-gram index of ``[BOS] + src`` reads it (the drafter's scan must agree)."""
    xs = [-1] + list(src)
    index = {}
    for n in range(min_ngram, max_ngram + 1):
        for end in range(n - 1, len(xs)):
            index.setdefault(tuple(xs[end - n + 1: end + 1]), []).append(end)
    prefix = [2] + list(out)
    if len(prefix) == 1:
        return 0
    for n in range(min(max_ngram, len(prefix)), min_ngram - 1, -1):
        key = tuple(prefix[len(prefix) - n:]) if n < len(prefix) else (-1,) + tuple(prefix[1:])
        hits = index.get(key)
        if hits is not None:
            return hits[0] if len(hits) == 1 else None
    return None


@property_settings(20 / 3)
@given(st.lists(st.integers(4, 9), max_size=30), st.lists(st.integers(4, 9), max_size=6), st.integers(1, 4),
       st.integers(1, 4))
def test_iad_scan_matches_an_ngram_index(src, out, a, b):
    """The source scanned for the output's last token finds the match an n-gram index would (a small vocabulary:
    repeats, ambiguous and BOS-anchored matches are common)."""
    lo, hi = min(a, b), max(a, b)
    dr = InputCopyDrafter(max_ngram=hi, min_ngram=lo)
    st_ = state(src + [2], out)
    dr.start(st_)
    assert dr.match(st_) == _match_by_index(src + [2], out, hi, lo)
