"""A ragged batched pass's attention in blocks (fastdec/engine/ragged_attention.py): the blocks cover every real
token's query columns and no row past its draft where that saves work, and a packed pass computed in blocks gives
each real token the features the padded pass gives it (random fairseq Transformers, float64)."""
import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st
from helpers.properties import property_settings

from conftest import MODEL_CONFIGS, random_model
from fastdec.engine.batched import BatchedVerifier
from fastdec.engine.ragged_attention import plan_blocks

SETTINGS = property_settings(1 / 2)


def covered(blocks, B, n):
    """Which (row, column) cells the blocks compute, each at most once."""
    seen = torch.zeros(B, n, dtype=torch.int64)
    for b in blocks:
        rows = b.index.tolist() if b.index is not None else range(b.rows.start, b.rows.stop)
        for r in rows:
            seen[r, b.cols[0]: b.cols[1]] += 1
    return seen


@given(n_valid=st.lists(st.integers(0, 40), min_size=2, max_size=40), base=st.integers(0, 30),
       spread=st.integers(0, 4))
def test_blocks_cover_every_real_token_once_and_read_its_keys(n_valid, base, spread):
    if max(n_valid) == 0:
        n_valid[0] = 1
    lengths = [base + (i * 7) % (spread + 1) for i in range(len(n_valid))]
    blocks = plan_blocks(n_valid, lengths)
    B, n = len(n_valid), max(n_valid)
    if blocks is None:
        return
    seen = covered(blocks, B, n)
    assert seen.max() <= 1
    for r, m in enumerate(n_valid):
        assert seen[r, :m].eq(1).all(), (r, m, blocks)
    for b in blocks:  # a block's self-attention reads each of its rows' keys up to its last column
        rows = b.index.tolist() if b.index is not None else range(b.rows.start, b.rows.stop)
        assert b.keys >= max(lengths[r] for r in rows) + b.cols[1]
    # fewer cells than the padded pass: a plan is made only where it saves work
    assert seen.sum() < B * n


def test_one_wide_row_beside_one_token_rows_is_attended_apart():
    n_valid = [1] * 31 + [17]
    blocks = plan_blocks(n_valid, [30] * 32)
    assert blocks is not None and covered(blocks, 32, 17).sum() == 31 + 17
    assert [b.cols for b in blocks] == [(0, 1), (1, 17)]
    assert blocks[0].keys == 31 and blocks[1].keys == 30 + 17


def test_rows_that_draft_alike_make_one_padded_block():
    assert plan_blocks([5] * 8, [3] * 8) is None
    assert plan_blocks([4, 5, 5, 4, 5, 5, 4, 5], [3] * 8) is None  # (a column of padding in a few rows: not worth it)


def test_wide_rows_far_apart_are_gathered_and_rows_together_are_sliced():
    apart = plan_blocks([20] + [1] * 30 + [20], [10] * 32)
    assert apart is not None and apart[1].index is not None and apart[1].index.tolist() == [0, 31]
    together = plan_blocks([1] * 10 + [20] * 12 + [1] * 10, [10] * 32)
    assert together is not None and together[1].index is None and together[1].rows == slice(10, 22)


@SETTINGS
@pytest.mark.parametrize("idx", range(len(MODEL_CONFIGS)))
@given(data=st.data())
def test_a_packed_pass_in_blocks_gives_every_real_token_the_padded_pass_features(idx, data):
    _, d, ver = random_model(idx)
    B = data.draw(st.integers(6, 12))
    srcs = [torch.tensor(data.draw(st.lists(st.integers(4, len(d) - 1), min_size=1, max_size=12)) + [d.eos()])
            for _ in range(B)]
    prefix = data.draw(st.lists(st.integers(1, 10), min_size=B, max_size=B))
    if data.draw(st.booleans()):  # rows of equal lengths (a first drafted pass after greedy ones)
        prefix = [prefix[0]] * B
    # most rows feed a token or a few (0: a row waiting the pass out), a few rows draft wide
    n_valid = data.draw(st.lists(st.integers(0, 3), min_size=B, max_size=B))
    for r in data.draw(st.lists(st.integers(0, B - 1), min_size=1, max_size=3)):
        n_valid[r] = data.draw(st.integers(8, 20))
    assume(plan_blocks(n_valid, prefix) is not None)  # (a pass whose padding is not worth a block: the padded pass)
    P, n = max(prefix), max(n_valid)
    feed = torch.randint(4, len(d), (B, P + n), generator=torch.Generator().manual_seed(sum(n_valid)))
    hidden = {}
    for pack in (True, False):
        bver = BatchedVerifier(ver, pack=False)  # (the same caches for both: the prefixes padded)
        bver.start(srcs)
        bver.forward(feed[:, :P], prefix)
        bver.pack = pack
        hidden[pack] = bver.forward(feed[:, P:], n_valid)
    for b, m in enumerate(n_valid):
        torch.testing.assert_close(hidden[True][b, :m], hidden[False][b, :m], rtol=0, atol=1e-12)
