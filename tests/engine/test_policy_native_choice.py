"""The batched choice on a fused pass in C: the same draft lengths, promise and positions read as the Python loop, bit
for bit, on random batches (sparse drafter tables, padding, a choice's own time per position, rows past the tables'
first length); and the Python loop where no C compiler is found."""
import pytest
from hypothesis import given
from hypothesis import strategies as st
from helpers.policy import batch_policy, fused_case, projection_rows, rows_of
from helpers.properties import property_settings

from fastdec.engine.policy import PassCost, native_choice

SETTINGS = property_settings(1)


def _choose(c, extra, python: bool):
    """The choice (draft lengths, promise, positions read as the choice measured them) of a policy made for case ``c``,
    in Python or in C."""
    horizon, q, limits, counts, fed, pass_s, drafter_s, started, src_lens, per_row = c
    read_s, pad_s, d_keys, s_keys, wide = extra
    B = len(limits)
    if wide:  # more rows than the tables' first length (16 positions): the C choice asks for longer ones
        limits, counts, started, src_lens = limits * 4, counts * 4, started * 4, src_lens * 4
        B *= 4
        fed = [B + f - fed[0] for f in fed]
    cost = PassCost(batch=B, fed=fed, pass_s=pass_s, step_s=pass_s[0], pad_s=pad_s, **projection_rows(B, per_row))
    policy = batch_policy(cost, horizon, q, drafter_s, fused=True)
    policy._read_s = read_s
    policy._drafter_s = {k: drafter_s * k for k in d_keys}
    policy._start_s = {k: drafter_s / 3 * k for k in s_keys}
    states = rows_of(counts, started, limits, src_lens)
    with pytest.MonkeyPatch.context() as m:
        if python:
            m.setattr(policy, "_native", None)
        seen = []
        m.setattr(policy, "_observe_read", seen.append)
        got = policy.choose_batch(states, None)
    return got, policy._promised and policy._promised[1::2], len(seen), policy._batch_skips


@SETTINGS
@given(c=fused_case(), read_s=st.sampled_from([0.0, 1e-7, 3e-6]), pad_s=st.sampled_from([0.0, 1e-6]),
       d_keys=st.sets(st.integers(1, 30), max_size=4), s_keys=st.sets(st.integers(1, 30), max_size=4),
       wide=st.booleans())
def test_the_c_choice_is_the_python_choice_bit_for_bit(c, read_s, pad_s, d_keys, s_keys, wide):
    if native_choice.choice_module() is None:
        pytest.skip("no C compiler: the Python loop makes every choice")
    extra = (read_s, pad_s, d_keys, s_keys, wide)
    assert _choose(c, extra, False) == _choose(c, extra, True)


def test_without_a_c_compiler_the_python_loop_chooses(tmp_path, monkeypatch):
    monkeypatch.setattr(native_choice, "_LOADED", {})
    monkeypatch.setenv("FASTDEC_NATIVE_CACHE", str(tmp_path))
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    assert native_choice.choice_module() is None
    case = (4, [0.97] * 4, [4, 4], [None, None], [2, 3, 4, 6, 10, 18, 34, 74], [1e-3] + [1.000001e-3] * 7, 0.0,
            [True, True], [20, 20], 0.0)
    got, promised, _, _ = _choose(case, (0.0, 0.0, {1, 2}, {1, 2}, False), False)
    assert got == [4, 4] and promised[0] > 0

