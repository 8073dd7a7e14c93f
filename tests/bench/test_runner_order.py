"""The runner's schedule: at batch 1 every method decodes every sentence once, in an order shuffled per sentence
(seeded), so that no method always follows the same one (a method right after a PyTorch one runs on caches that method
left); in batches every method of a batch size decodes the same batches (longest sentences first), interleaved batch by
batch in a shuffled order."""
from dataclasses import dataclass
from typing import List

import pytest
import torch

import fastdec.bench.runner as runner
from fastdec.bench.methods import parse_method


@dataclass
class Decoded:
    tokens: List[int]
    time: float
    id: int = 0


def recording(calls: list):
    """A batch-1 method builder whose decodes record ``(sentence, method)`` in ``calls`` (the source's first token is the
    output)."""
    def build(self, m):
        def one(i, src):
            calls.append((i, m.label))
            return Decoded(tokens=[int(src[0])], time=1e-3)
        return one
    return build


def test_every_method_decodes_every_sentence_in_a_shuffled_order(monkeypatch):
    calls = []
    monkeypatch.setattr(runner._Systems, "build", recording(calls))
    methods = [parse_method(s) for s in ("greedy", "iad", "greedy:backend=fast", "iad:backend=fast:policy=cost")]
    sources = [torch.tensor([5 + i, 2]) for i in range(40)]
    out = runner.run_benchmark(methods, ctx=None, sources=sources)
    assert {label: [r.tokens[0] for r in recs] for label, recs in out.items()} == {
        m.label: [5 + i for i in range(40)] for m in methods}
    assert sorted(calls) == sorted((i, m.label) for i in range(40) for m in methods)
    before = {}
    for (_, prev), (_, label) in zip(calls, calls[1:]):
        before.setdefault(label, set()).add(prev)
    assert all(len(prev) >= 3 for prev in before.values())  # every method follows every other one at some point
    firsts = {label for i, label in calls[::4]}
    assert len(firsts) == 4
    again = []
    monkeypatch.setattr(runner._Systems, "build", recording(again))
    runner.run_benchmark(methods, ctx=None, sources=sources)
    assert again == calls  # seeded: the same schedule every run


def test_batched_methods_decode_the_same_batches_interleaved(monkeypatch):
    calls = []

    def build_batched(self, m):
        def decode(sources, ids):
            calls.append((m.label, tuple(ids)))
            return [Decoded(tokens=[int(s[0])], time=1e-3, id=i) for s, i in zip(sources, ids)]
        return decode
    monkeypatch.setattr(runner._Systems, "build_batched", build_batched)
    methods = [parse_method(s) for s in ("greedy:batch=4", "iad:batch=4:policy=cost", "ct2:batch=4:model=x",
                                         "greedy:batch=8")]
    lengths = [3, 9, 5, 9, 2, 7, 4, 8, 6, 1, 5]
    sources = [torch.tensor([100 + i] + [7] * (n - 1) + [2]) for i, n in enumerate(lengths)]
    out = runner.run_benchmark(methods, ctx=None, sources=sources)
    assert {label: [r.tokens[0] for r in recs] for label, recs in out.items()} == {
        m.label: [100 + i for i in range(len(sources))] for m in methods}
    longest_first = sorted(range(len(sources)), key=lambda i: -lengths[i])
    fours = [tuple(longest_first[i: i + 4]) for i in range(0, len(sources), 4)]
    by4 = [c for c in calls if c[0] != "greedy-bs8"]
    # every method of a batch size decodes the same batches, one batch after the other, in a shuffled order
    assert [ids for _, ids in by4] == [b for b in fours for _ in range(3)]
    orders = [tuple(label for label, _ in by4[i: i + 3]) for i in range(0, len(by4), 3)]
    assert all(sorted(o) == sorted(m.label for m in methods[:3]) for o in orders) and len(set(orders)) > 1
    assert [ids for label, ids in calls if label == "greedy-bs8"] == [tuple(longest_first[:8]),
                                                                     tuple(longest_first[8:])]


def test_the_warm_up_leaves_a_method_s_draft_policy_fresh(monkeypatch):
    """Warm-up decodes of a method with a cost-aware policy run on a policy of their own (built apart); the timed
    decodes start from a fresh one. Methods without a policy warm up on the very function they are timed with."""
    built, used = [], []

    def build(self, m):
        tag = (m.label, sum(1 for label, _ in built if label == m.label))
        built.append(tag)
        return lambda i, src: used.append((tag, i)) or Decoded(tokens=[int(src[0])], time=1e-3)

    def build_batched(self, m):
        tag = (m.label, sum(1 for label, _ in built if label == m.label))
        built.append(tag)
        return lambda sources, ids: used.append((tag, tuple(ids))) or [
            Decoded(tokens=[int(s[0])], time=1e-3, id=i) for s, i in zip(sources, ids)]
    monkeypatch.setattr(runner._Systems, "build", build)
    monkeypatch.setattr(runner._Systems, "build_batched", build_batched)
    methods = [parse_method(s) for s in ("greedy", "iad:policy=cost", "iad", "iad:policy=cost:batch=2")]
    sources = [torch.tensor([5 + i, 2]) for i in range(4)]
    runner.run_benchmark(methods, ctx=None, sources=sources, warmup=2)
    warm = {tag for tag, i in used[:6]}  # two warm-up sentences of three batch-1 methods
    assert warm == {("greedy", 0), ("iad-cost", 1), ("iad", 0)}
    assert {tag for tag, _ in used[6:18]} == {("greedy", 0), ("iad-cost", 0), ("iad", 0)}
    assert used[18] == (("iad-cost-bs2", 1), (0, 1)) and {tag for tag, _ in used[19:]} == {("iad-cost-bs2", 0)}


def test_a_batched_method_warms_up_on_the_first_longest_batch_of_its_size(monkeypatch):
    """What a batch that large first allocates is charged to no method: each batched method's warm-up decodes the
    batch every method then decodes first, not the first ``warmup`` sentences of the input."""
    calls = []

    def build_batched(self, m):
        return lambda sources, ids: calls.append((m.label, tuple(ids))) or [
            Decoded(tokens=[int(s[0])], time=1e-3, id=i) for s, i in zip(sources, ids)]
    monkeypatch.setattr(runner._Systems, "build_batched", build_batched)
    methods = [parse_method(s) for s in ("greedy:batch=4", "iad:batch=4", "greedy:batch=2")]
    lengths = [3, 9, 5, 9, 2, 7, 4, 8]
    sources = [torch.tensor([100 + i] + [7] * (n - 1) + [2]) for i, n in enumerate(lengths)]
    runner.run_benchmark(methods, ctx=None, sources=sources, warmup=1)
    longest_first = tuple(sorted(range(len(sources)), key=lambda i: -lengths[i]))
    assert calls[:3] == [("greedy-bs4", longest_first[:4]), ("iad-bs4", longest_first[:4]),
                         ("greedy-bs2", longest_first[:2])]
    assert len(calls) == 3 + 2 * 2 + 4  # then every batch once per method


def test_repeated_batches_alternate_methods_and_keep_each_ones_fastest(monkeypatch):
    """With repeats, every method decodes a batch once per round (each round in its own order) and the batch's fastest
    decode is kept; a batch decoded differently across repeats is an error."""
    calls, stall = [], {("greedy-bs2", 0): 5.0, ("iad-bs2", 1): 7.0}  # (method, call index): seconds of a stall

    def build_batched(self, m):
        def decode(sources, ids):
            n = sum(1 for label, _ in calls if label == m.label)
            calls.append((m.label, tuple(ids)))
            return [Decoded(tokens=[int(s[0])], time=1e-3 + stall.get((m.label, n), 0.0), id=i)
                    for s, i in zip(sources, ids)]
        return decode
    monkeypatch.setattr(runner._Systems, "build_batched", build_batched)
    methods = [parse_method(s) for s in ("greedy:batch=2", "iad:batch=2")]
    sources = [torch.tensor([100 + i] + [7] * (5 - i) + [2]) for i in range(4)]
    out = runner.run_benchmark(methods, ctx=None, sources=sources, repeats=3)
    assert len(calls) == 2 * 2 * 3  # two batches, two methods, three rounds
    assert all(len({label for label, _ in calls[i: i + 2]}) == 2 for i in range(0, len(calls), 2))  # rounds alternate
    assert all(r.time == 1e-3 for recs in out.values() for r in recs)  # the stalled decodes were not kept
    assert [r.tokens[0] for r in out["iad-bs2"]] == [100, 101, 102, 103]

    def differs(self, m):
        def decode(sources, ids):
            calls.append(m.label)
            return [Decoded(tokens=[len(calls)], time=1e-3, id=i) for i in ids]
        return decode
    monkeypatch.setattr(runner._Systems, "build_batched", differs)
    with pytest.raises(RuntimeError, match="decoded differently across repeats"):
        runner.run_benchmark(methods[:1], ctx=None, sources=sources, repeats=2)


def test_every_repeat_starts_from_the_policy_the_first_started_from(monkeypatch):
    """A cost-aware policy learns from every decode: each repeat of a sentence (a batch) starts from what the policy
    knew before the first, and the next sentence (batch) from what the last repeat left."""
    from fastdec.engine.policy import CostAwarePolicy

    seen = []

    def counting(decode_args):
        def build(self, m):
            policy = CostAwarePolicy(8)

            def decode(*args):
                seen.append((m.label, policy.probes))
                policy.probes += 1  # (what a decode learns)
                return decode_args(*args)
            decode.policy = policy
            return decode
        return build
    monkeypatch.setattr(runner._Systems, "build", counting(lambda i, src: Decoded(tokens=[int(src[0])], time=1e-3)))
    monkeypatch.setattr(runner._Systems, "build_batched", counting(
        lambda sources, ids: [Decoded(tokens=[int(s[0])], time=1e-3, id=i) for s, i in zip(sources, ids)]))
    methods = [parse_method(s) for s in ("iad:policy=cost", "iad:policy=cost:batch=2")]
    sources = [torch.tensor([100 + i] + [7] * (5 - i) + [2]) for i in range(4)]
    out = runner.run_benchmark(methods, ctx=None, sources=sources, repeats=3)
    assert [r.tokens[0] for r in out["iad-cost-bs2"]] == [100, 101, 102, 103]
    for m in methods:
        starts = [n for label, n in seen if label == m.label]
        units = 4 if m.batch_size == 1 else 2
        assert starts == [u for u in range(units) for _ in range(3)], m.label


def test_in_turns_of_a_block_every_method_decodes_that_many_consecutive_sentences(monkeypatch):
    calls = []
    monkeypatch.setattr(runner._Systems, "build", recording(calls))
    methods = [parse_method(s) for s in ("greedy", "iad", "iad:policy=cost")]
    sources = [torch.tensor([5 + i, 2]) for i in range(10)]
    seen = []
    out = runner.run_benchmark(methods, ctx=None, sources=sources, block=4, progress=lambda i, n: seen.append(i))
    assert {label: [r.tokens[0] for r in recs] for label, recs in out.items()} == {
        m.label: [5 + i for i in range(10)] for m in methods}
    turns = [calls[k: k + 4] for k in range(0, 24, 4)] + [calls[24 + k: 26 + k] for k in range(0, 6, 2)]
    for turn in turns:  # a method's turn: consecutive sentences of one round
        assert len({label for _, label in turn}) == 1
        assert [i for i, _ in turn] == list(range(turn[0][0], turn[0][0] + len(turn)))
    assert [turns[k][0][1] for k in range(3)] != [turns[k][0][1] for k in range(3, 6)]  # shuffled per round
    assert seen == list(range(10))
    with pytest.raises(ValueError, match="block must be >= 1"):
        runner.run_benchmark(methods, ctx=None, sources=sources, block=0)
