"""The engine's loops pause Python's cyclic garbage collector while they decode and make a collection that came due
before the decode's clock stops: no collection lands inside a measured pass (where a cost-aware policy would take it
for the pass's cost), and none is left out of the decode's time."""
import gc

import pytest
import torch

from conftest import random_model
from fastdec.engine import accept_top1, draft_verify_accept
from fastdec.engine.batched import decode_batched
from helpers.drafters import RandomDrafter


class _Recorder(RandomDrafter):
    """Random drafts; records whether the collector was on at each call and leaves cyclic garbage behind."""

    def __init__(self, vocab_size: int, garbage: int = 0):
        super().__init__(vocab_size, max_tokens=4, seed=3, low=4)
        self.collector_on, self.garbage = [], garbage

    def propose(self, state):
        self.collector_on.append(gc.isenabled())
        for _ in range(self.garbage):
            cycle = []
            cycle.append(cycle)
        return super().propose(state)


def _sources(d, n=3):
    gen = torch.Generator().manual_seed(5)
    return [torch.cat([torch.randint(4, len(d), (4 + i,), generator=gen), torch.tensor([d.eos()])]) for i in range(n)]


@pytest.fixture
def collector_state():
    was, limits = gc.isenabled(), gc.get_threshold()
    gc.enable()
    yield
    gc.set_threshold(*limits)
    (gc.enable if was else gc.disable)()


def _decode(batched: bool, ver, drafter, sources):
    if batched:
        return decode_batched(ver, sources, drafter, accept_top1, batch_size=len(sources), max_len_b=6)
    return [draft_verify_accept(ver, s, drafter, accept_top1, max_len_b=6) for s in sources]


@pytest.mark.parametrize("batched", [False, True])
def test_collector_paused_while_decoding_and_on_again_after(collector_state, batched):
    _, d, ver = random_model(0)
    drafter = _Recorder(len(d))
    _decode(batched, ver, drafter, _sources(d))
    assert drafter.collector_on and not any(drafter.collector_on)
    assert gc.isenabled()


@pytest.mark.parametrize("batched", [False, True])
def test_collector_left_off_where_it_was_off(collector_state, batched):
    _, d, ver = random_model(0)
    drafter = _Recorder(len(d))
    gc.disable()
    _decode(batched, ver, drafter, _sources(d))
    assert not gc.isenabled()


@pytest.mark.parametrize("batched", [False, True])
def test_collector_on_again_after_a_failed_decode(collector_state, batched):
    _, d, ver = random_model(0)

    class Failing(_Recorder):
        def propose(self, state):
            raise RuntimeError("drafter failed")
    with pytest.raises(RuntimeError, match="drafter failed"):
        _decode(batched, ver, Failing(len(d)), _sources(d))
    assert gc.isenabled()


@pytest.mark.parametrize("batched", [False, True])
def test_a_collection_due_is_made_inside_the_decode(collector_state, batched):
    """Cyclic garbage made while decoding is collected before the decode returns, while the collector is still paused
    (the loop's own collection, inside its clock), not by the interpreter once it is on again."""
    _, d, ver = random_model(0)
    gc.collect()
    gc.set_threshold(50, 10, 10)
    made = []

    def seen(phase, info):
        if phase == "start":
            made.append((info["generation"], gc.isenabled()))
    gc.callbacks.append(seen)
    try:
        results = _decode(batched, ver, _Recorder(len(d), garbage=200), _sources(d))
    finally:
        gc.callbacks.remove(seen)
    assert any(gen <= 1 and not on for gen, on in made), made
    for r in results:
        s = r.stats
        parts = s.time_encoder + s.time_drafter + s.time_verifier + s.time_other
        assert s.time == pytest.approx(parts, rel=1e-6, abs=1e-9)
