"""Blockwise distance-based selection (Stern et al. 2018, Sec. 5.2) for ordinal outputs such as pixel intensities.

On random float64 models whose tokens 4.. stand for the values 0.. (the specials have none): every output token is
within ε of the verifier's own choice after the output's own prefix (a teacher-forced pass checks each position), at
batch 1 and batched, on the PyTorch and the fast backend; at ε = 0 the output is exactly greedy's."""
import random
from typing import List

import torch
from hypothesis import given
from hypothesis import strategies as st
from helpers.properties import property_settings

from conftest import MODEL_CONFIGS, random_model
from fastdec.engine import greedy_decode
from fastdec.engine.acceptance import accept_top1, accept_within_distance, make_acceptance, ordinal_values
from fastdec.engine.batched import decode_batched
from fastdec.engine.drafters import Drafter
from fastdec.engine.fast_verifier import FastVerifier
from fastdec.engine.loop import compute_max_len, draft_verify_accept
from fastdec.engine.projection import MaskedLogProbs
from helpers.drafters import PerSourceDrafter, RandomDrafter

SETTINGS = property_settings(1 / 2)
VALUES = [None] * 4 + list(range(300))  # token id -> intensity (ids 0-3: <s>, <pad>, </s>, <unk>)
FAST_IDX = [i for i, c in enumerate(MODEL_CONFIGS) if "decoder_output_dim" not in c]


class JitterDrafter(Drafter):
    """Drafts a known output with each token moved by a random offset in [-jitter, jitter] (an ordinal neighbour of
    the right token, the near miss the distance rule is for), now and then a random token."""

    name = "jitter"

    def __init__(self, reference: List[int], vocab_size: int, jitter: int, seed: int):
        self.reference, self.vocab_size, self.jitter = list(reference), vocab_size, jitter
        self.rng = random.Random(seed)

    def _move(self, t: int) -> int:
        if self.rng.random() < 0.1:
            return self.rng.randrange(4, self.vocab_size)
        if t < 4:
            return t
        return min(self.vocab_size - 1, max(4, t + self.rng.randint(-self.jitter, self.jitter)))

    def propose(self, state) -> List[int]:
        j = state.num_generated
        return [self._move(t) for t in self.reference[j: j + self.rng.randint(0, 10)]]


def verifier_choices(ver, src: torch.Tensor, output: List[int], max_len: int) -> List[int]:
    """The verifier's (masked, greedy) token at each position of ``output`` given ``output``'s own prefix."""
    with torch.inference_mode():  # as in the loops (the verifier's weights may record autograd history)
        ver.start(src)
        hidden = ver.forward(torch.tensor([ver.eos] + output[:-1]), need_logits=False).hidden
        return MaskedLogProbs(ver, max_len).of(hidden, 0)(0, len(output)).argmax(-1).tolist()


def assert_within(ver, src, output, eps, max_len):
    for t, (y, c) in enumerate(zip(output, verifier_choices(ver, src, output, max_len))):
        close = VALUES[y] is not None and VALUES[c] is not None and abs(VALUES[y] - VALUES[c]) <= eps
        assert y == c or close, (t, y, c, eps)


@SETTINGS
@given(idx=st.sampled_from(range(len(MODEL_CONFIGS))), fast=st.booleans(), eps=st.integers(0, 4),
       lengths=st.lists(st.integers(0, 12), min_size=1, max_size=5), seed=st.integers(0, 10_000),
       max_len_b=st.integers(1, 14))
def test_every_token_is_within_eps_of_the_verifiers_choice_and_eps_0_is_greedy(idx, fast, eps, lengths, seed,
                                                                            max_len_b):
    if fast and idx not in FAST_IDX:
        idx = FAST_IDX[idx % len(FAST_IDX)]
    model, d, ver = random_model(idx)
    if fast:
        ver = FastVerifier(model)
    rng = random.Random(seed)
    srcs = [torch.tensor([rng.randrange(4, len(d)) for _ in range(n)] + [d.eos()]) for n in lengths]
    kw = dict(max_len_a=0.5, max_len_b=max_len_b)
    greedy = {tuple(s.tolist()): greedy_decode(ver, s, **kw).tokens for s in srcs}
    rule = accept_within_distance(eps, VALUES)

    def drafter():
        return PerSourceDrafter(lambda src: JitterDrafter(greedy[tuple(src)], len(d), eps + 1, seed))

    single = [draft_verify_accept(ver, s, drafter(), rule, **kw).tokens for s in srcs]
    batched = [r.tokens for r in decode_batched(ver, srcs, drafter(), rule, batch_size=max(2, len(srcs)), **kw)]
    for s, a, b in zip(srcs, single, batched):
        max_len = compute_max_len(s.numel(), kw["max_len_a"], kw["max_len_b"], ver.max_positions)
        assert_within(ver, s, a, eps, max_len)
        assert_within(ver, s, b, eps, max_len)
        if eps == 0:
            assert a == b == greedy[tuple(s.tolist())]


def test_random_drafts_at_eps_0_equal_greedy_and_large_eps_accepts_more():
    """ε = 0 is the exact rule on arbitrary drafts; a wide ε accepts at least as many drafted tokens per pass as the
    exact rule on the same draft stream, and more somewhere."""
    _, d, ver = random_model(0)
    src = torch.tensor([5, 9, 12, 7, 30, 6, d.eos()])
    kw = dict(max_len_a=1.0, max_len_b=20)
    greedy = greedy_decode(ver, src, **kw).tokens
    exact = draft_verify_accept(ver, src, RandomDrafter(len(d), seed=1, low=4), accept_within_distance(0, VALUES), **kw)
    assert exact.tokens == greedy
    near = [draft_verify_accept(ver, src, JitterDrafter(greedy, len(d), 3, seed), rule, **kw).stats
            for seed in range(8) for rule in (accept_top1, accept_within_distance(len(d), VALUES))]
    assert sum(s.out_len / s.iterations for s in near[1::2]) > sum(s.out_len / s.iterations for s in near[::2])


def test_rule_decisions_and_values():
    values = ordinal_values(["<s>", "<pad>", "</s>", "<unk>", "0", "1", "2", "3", "10", "word"])
    assert values == [None, None, None, None, 0, 1, 2, 3, 10, None]
    rule = make_acceptance("distance", epsilon=2, values=values)
    assert rule([4, 5, 7, 2], [5, 7, 4, 2]) == 2            # |0-1|, |1-3| within 2; |3-0| is not
    assert rule([2, 9], [2, 9]) == 2                           # tokens without a value: only when equal
    assert rule([2], [4]) == 0 and rule([9], [8]) == 0 and rule([8], [7]) == 0  # EOS, a word; |10-3| > 2
    assert accept_within_distance(0, values)([4, 5], [4, 6]) == 1 and accept_within_distance(0, values).exact_prefix
    assert not rule.needs_log_probs and rule.name == "eps2"
    for bad in (-1, 1.5, "2"):
        try:
            accept_within_distance(bad, values)
        except ValueError as e:
            assert "epsilon" in str(e)
        else:
            raise AssertionError(f"epsilon={bad!r} accepted")
