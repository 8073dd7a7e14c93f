"""The batch-1 runner's schedule: every method decodes every sentence once, in an order shuffled per sentence (seeded),
so that no method always follows the same one (a method right after a PyTorch one runs on caches that method left)."""
from dataclasses import dataclass
from typing import List

import torch

import fastdec.bench.runner as runner
from fastdec.bench.methods import parse_method


@dataclass
class Decoded:
    tokens: List[int]
    time: float


def test_every_method_decodes_every_sentence_in_a_shuffled_order(monkeypatch):
    calls = []

    def build(self, m):
        def one(i, src):
            calls.append((i, m.label))
            return Decoded(tokens=[int(src[0])], time=1e-3)
        return one
    monkeypatch.setattr(runner._Systems, "build", build)
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
    monkeypatch.setattr(runner._Systems, "build", lambda self, m: (lambda i, src: again.append((i, m.label)) or
                                                                  Decoded(tokens=[int(src[0])], time=1e-3)))
    runner.run_benchmark(methods, ctx=None, sources=sources)
    assert again == calls  # seeded: the same schedule every run
