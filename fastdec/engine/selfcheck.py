"""``fastdec selfcheck``: is decoding lossless on this device? Seconds, before anything is trained.

Random fairseq Transformers (three decoder variants) on ``--device`` in ``--dtype``; ragged random sources decoded
by greedy search at batch 1 (the reference), then by every exact method at batch 1 and batched (padded and packed
passes, per-row rollback): IAD's input copy; GAD with a random NAT block drafter (k = 5) on the same device; and
noisy copies of each sentence's own greedy output accepted by the top-1 rule, by GAD++'s rule with beta = 1 and by
Blockwise's top-k rule with k = 1; and IAD, GAD and the top-1 noisy copies again with the cost-aware policy
(``+cost``: draft lengths chosen on the costs measured here). Every output must equal the reference. One line per
model and method; exit status 1 if any output differs. The noisy-copy drafters are the engine tests' too
(tests/helpers/drafters.py).

scripts/gpu_run.sh runs it on the GPU before the workflow (float64: must be identical, or the run stops; float32,
and float16/bfloat16 when the run is in half precision: reported, since ties may flip), so a CUDA defect in the
verifier, the KV-cache rollback or the batched path shows in seconds rather than after the lease's minutes of
training.

    python -m fastdec selfcheck [--device auto|cpu|cuda] [--dtype float64|float32|float16|bfloat16]
                                [--sentences N] [--batch B]
"""
from __future__ import annotations

import random
import time
from typing import Dict, List, Optional, Sequence, Tuple

import torch

from .acceptance import AcceptanceRule, accept_top1, accept_top_beta, accept_top_k
from .batched import decode_batched
from .drafters import Drafter, InputCopyDrafter
from .loop import draft_verify_accept, greedy_decode
from .nat_drafter import NATDrafter
from .policy import CostAwarePolicy
from .profile import build_random_nat_drafter, build_random_transformer
from .verifier import Verifier

# decoder variants: post-norm with sinusoidal positions; pre-norm with learned positions; shared embeddings with an
# embedding layer norm
VARIANTS = {
    "post-norm": dict(),
    "pre-norm": dict(normalize_before=True, learned_pos=True),
    "shared-emb": dict(share_all_embeddings=True, layernorm_embedding=True),
}
DTYPES = {"float64": torch.float64, "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


class NoisyOracleDrafter(Drafter):
    """Drafts a known continuation (e.g. the greedy output) with random corruptions.

    ``reference`` is the full expected output ``o_1 .. o_m``; each iteration drafts up to
    ``max_tokens`` of ``reference[j:]`` and replaces each token by a random id with probability ``noise``.
    """

    name = "noisy-oracle"

    def __init__(self, reference: Sequence[int], vocab_size: int, noise: float = 0.2, max_tokens: int = 10,
                 seed: int = 0, low: int = 4):
        self.reference = list(reference)
        self.vocab_size, self.noise, self.max_tokens, self.low = vocab_size, noise, max_tokens, low
        self.rng = random.Random(seed)

    def propose(self, state) -> List[int]:
        j = state.num_generated
        k = self.rng.randint(0, self.max_tokens)
        return [self.rng.randrange(self.low, self.vocab_size) if self.rng.random() < self.noise else t
                for t in self.reference[j: j + k]]


class PerSourceDrafter(Drafter):
    """One drafter serving a batch: row by row, a child drafter per distinct source, ``make(src_list)`` building it
    (e.g. a noisy oracle of that sentence's own greedy output). Rows of the same source share their child."""

    name = "per-source"

    def __init__(self, make):
        self.make = make
        self.children = {}

    def child(self, state):
        key = tuple(state.src_list)
        if key not in self.children:
            self.children[key] = self.make(state.src_list)
        return self.children[key]

    def start(self, state):
        self.child(state).start(state)

    def propose(self, state):
        return self.child(state).propose(state)


def random_sources(vocab_size: int, eos: int, n: int, seed: int) -> List[torch.Tensor]:
    rng = random.Random(seed)
    return [torch.tensor([rng.randrange(4, vocab_size) for _ in range(rng.randint(0, 14))] + [eos])
            for _ in range(n)]


def noisy_references(references: Dict[Tuple[int, ...], List[int]], vocab_size: int, seed: int) -> Drafter:
    """Per sentence, noisy drafts of its own greedy output (``references``: source ids -> output): long drafts,
    partial acceptance, drafted EOS."""
    return PerSourceDrafter(lambda src: NoisyOracleDrafter(references[tuple(src)], vocab_size, noise=0.3, seed=seed))


# the methods also decoded with the cost-aware policy, which shortens their drafts (``+cost`` rows): an input copy, a
# NAT drafter, and drafts of 80 % correct tokens, whose truncations the policy decides on the device's measured costs
COST_AWARE = ("iad", "gad", "noisy-top1")


def exact_methods(references, vocab_size: int, seed: int, nat_drafter: Optional[Drafter] = None
                  ) -> List[Tuple[str, Drafter, AcceptanceRule]]:
    gad = [("gad", nat_drafter, accept_top1)] if nat_drafter is not None else []
    return [("iad", InputCopyDrafter(), accept_top1), *gad,
            ("noisy-top1", noisy_references(references, vocab_size, seed), accept_top1),
            ("gad++-beta1", noisy_references(references, vocab_size, seed + 1), accept_top_beta(1, 2.5)),
            ("blockwise-k1", noisy_references(references, vocab_size, seed + 2), accept_top_k(1))]


def check_model(ver: Verifier, vocab_size: int, eos: int, *, sentences: int, batch: int, seed: int,
                methods=None, nat_drafter: Optional[Drafter] = None, max_len_a: float = 1.2,
                max_len_b: int = 10) -> List[dict]:
    """Rows ``{method, mode, identical, total, tokens_per_iteration}``: each method at batch 1 and batched (padded
    and packed) against each sentence's batch-1 greedy output; ``methods`` (name, drafter, rule) defaults to
    :func:`exact_methods` (with GAD when ``nat_drafter`` is given)."""
    kw = dict(max_len_a=max_len_a, max_len_b=max_len_b)
    srcs = random_sources(vocab_size, eos, sentences, seed)
    greedy = [greedy_decode(ver, s, **kw).tokens for s in srcs]
    refs = {tuple(s.tolist()): g for s, g in zip(srcs, greedy)}
    rows = [_row("greedy", f"batch {batch}", decode_batched(ver, srcs, batch_size=batch, **kw), greedy)]
    for name, drafter, rule in methods or exact_methods(refs, vocab_size, seed, nat_drafter):
        for label, policy in [(name, lambda: None)] + [(f"{name}+cost", lambda: CostAwarePolicy(16))] * (
                name in COST_AWARE):  # (each mode's policy learns from scratch)
            one = policy()
            outs = {"batch 1": [draft_verify_accept(ver, s, drafter, rule, policy=one, **kw) for s in srcs],
                    f"batch {batch} padded": decode_batched(ver, srcs, drafter, rule, batch_size=batch, pack=False,
                                                            policy=policy(), **kw),
                    f"batch {batch} packed": decode_batched(ver, srcs, drafter, rule, batch_size=batch, pack=True,
                                                            policy=policy(), **kw)}
            rows += [_row(label, mode, out, greedy) for mode, out in outs.items()]
    return rows


def _row(method: str, mode: str, results, greedy: Sequence[List[int]]) -> dict:
    return {"method": method, "mode": mode, "identical": sum(r.tokens == g for r, g in zip(results, greedy)),
            "total": len(greedy), "tokens_per_iteration": sum(len(r.tokens) for r in results)
            / max(1, sum(r.stats.iterations for r in results))}


def add_arguments(p) -> None:
    p.add_argument("--device", default="auto", help="auto (cuda when torch sees a GPU, else cpu), cpu or cuda")
    p.add_argument("--dtype", default="float64", choices=sorted(DTYPES))
    p.add_argument("--sentences", type=int, default=24, help="random sources per model (default 24)")
    p.add_argument("--batch", type=int, default=8, help="batch size of the batched runs (default 8)")
    p.add_argument("--seed", type=int, default=0)


def run_selfcheck(device: str, dtype: str, *, sentences: int = 24, batch: int = 8, seed: int = 0) -> List[dict]:
    """The rows of :func:`check_model` for each random model variant (key ``variant`` added) on ``device`` in
    ``dtype`` (a name of :data:`DTYPES`)."""
    half = DTYPES[dtype] in (torch.float16, torch.bfloat16)
    build_dtype = torch.float32 if half else DTYPES[dtype]  # random weights drawn in float32, then cast, as loaded
    rows = []
    for i, (variant, kwargs) in enumerate(VARIANTS.items()):
        model, d, _ = build_random_transformer(seed=seed + 100 + i, dtype=build_dtype, max_positions=64, **kwargs)
        ver = Verifier(model, device=device, dtype=DTYPES[dtype])
        nat, _ = build_random_nat_drafter(d, seed=seed + i, dtype=build_dtype, init_std=0.5)
        nat = NATDrafter(nat, k=5, verifier_vocab_size=ver.vocab_size, device=device, dtype=DTYPES[dtype])
        rows += [{"variant": variant, **r} for r in check_model(ver, len(d), d.eos(), sentences=sentences,
                                                                 batch=batch, seed=seed + i, nat_drafter=nat)]
    return rows


def main(a) -> int:
    device = ("cuda" if torch.cuda.is_available() else "cpu") if a.device == "auto" else a.device
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError("--device cuda, but torch sees no GPU (torch.cuda.is_available() is False); use --device cpu")
    half = DTYPES[a.dtype] in (torch.float16, torch.bfloat16)
    if half and not device.startswith("cuda"):
        raise ValueError(f"--dtype {a.dtype} needs a GPU (--device cuda); on the CPU use float64 or float32")
    if a.sentences < 1 or a.batch < 2:
        raise ValueError("--sentences must be >= 1 and --batch >= 2")
    t0 = time.perf_counter()
    rows = run_selfcheck(device, a.dtype, sentences=a.sentences, batch=a.batch, seed=a.seed)
    for r in rows:
        print(f"{r['variant']:<10} {r['method']:<15} {r['mode']:<16} {r['identical']}/{r['total']} identical to "
              f"greedy, {r['tokens_per_iteration']:.2f} tokens/iteration", flush=True)
    total = sum(r["total"] for r in rows)
    bad = total - sum(r["identical"] for r in rows)
    name = torch.cuda.get_device_name() if device.startswith("cuda") else "cpu"
    print(f"selfcheck: {total - bad} of {total} outputs identical to greedy on {device} ({name}), {a.dtype}, "
          f"{time.perf_counter() - t0:.1f} s", flush=True)
    return 1 if bad else 0
