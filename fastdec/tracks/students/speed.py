"""Per-token decoding cost of student structures at equal output length (CPU, batch 1), interleaved in one process:
``fastdec students-speed``.

Trained students of the demo differ in output length (and under CPU contention in how far they trained), so their
words-per-second mix decoder cost with output behaviour. This measurement isolates the decoder's cost: every
structure gets random weights of the same sizes, the same source, and decodes exactly ``steps`` tokens
(teacher-forced: the next input is fixed, the argmax over the vocabulary is still computed like greedy search) with

* ``fairseq``: fairseq's own incremental decoder (``model.decoder`` with ``incremental_state``, one token a step:
  what SequenceGenerator runs), and
* ``engine``: the engine's verifier (``make_verifier``: StudentVerifier or Verifier) one token a step.

Structures are timed round-robin, ``rounds`` times, in a fresh random order each round; a structure's speedup is the
MEDIAN over rounds of (baseline time / its time) within the same round, so bursts of load from other processes
(which make a "fastest of N" comparison a matter of luck) hit both sides of each ratio alike. The ratios are the
result; the tokens/s columns are medians too and only as good as the machine was quiet.

CLI: ``fastdec students-speed --embed-dim 128 --heads 4 --vocab 8000 --steps 30 --out speed.csv``.
"""
from __future__ import annotations

import argparse
import time
from types import SimpleNamespace
from typing import Dict, List

import torch

# name -> (self_attn, ffn, encoder layers, decoder layers, encoder heads kept per layer or None)
STRUCTURES = {
    "transformer_3_3": ("attention", True, 3, 3, None),
    "aan_3_3": ("aan", True, 3, 3, None),
    "ssru_3_3": ("ssru", True, 3, 3, None),
    "aan_noffn_3_3": ("aan", False, 3, 3, None),
    "ssru_noffn_3_3": ("ssru", False, 3, 3, None),
    "ssru_noffn_6_1": ("ssru", False, 6, 1, None),
    "ssru_noffn_6_1_pruned": ("ssru", False, 6, 1, 1),
}


def build(kind: str, ffn: bool, enc: int, dec: int, enc_heads, *, embed_dim: int, heads: int, vocab: int,
          seed: int = 0):
    import fastdec_fairseq  # noqa: F401
    from fastdec.engine.profile import build_dictionary
    from fastdec_fairseq.models.efficient_student import EfficientStudentModel

    d = build_dictionary(vocab)
    args = argparse.Namespace(
        encoder_layers=enc, decoder_layers=dec, encoder_embed_dim=embed_dim, decoder_embed_dim=embed_dim,
        encoder_ffn_embed_dim=4 * embed_dim, decoder_ffn_embed_dim=4 * embed_dim, encoder_attention_heads=heads,
        decoder_attention_heads=heads, share_all_embeddings=True, share_decoder_input_output_embed=True,
        decoder_self_attn=kind, decoder_no_ffn=not ffn, dropout=0.0,
        encoder_heads=",".join([str(enc_heads)] * enc) if enc_heads else None)
    torch.manual_seed(seed)
    model = EfficientStudentModel.build_model(args, SimpleNamespace(source_dictionary=d, target_dictionary=d))
    return model.eval(), d


@torch.inference_mode()
def fairseq_decode(model, src: torch.Tensor, targets: List[int]) -> None:
    enc = model.encoder(src[None], src_lengths=torch.tensor([src.numel()]))
    state: Dict = {}
    prev = torch.tensor([[2]])
    for t in targets:
        out, _ = model.decoder(prev, encoder_out=enc, incremental_state=state)
        out[0, -1].argmax()
        prev = torch.cat([prev, torch.tensor([[t]])], 1)


@torch.inference_mode()
def engine_decode(ver, src: torch.Tensor, targets: List[int]) -> None:
    ver.start(src)
    prev = 2
    for t in targets:
        ver.forward([prev]).logits[0].argmax()
        prev = t


def measure(embed_dim: int = 128, heads: int = 4, vocab: int = 8000, src_len: int = 20, steps: int = 30,
            rounds: int = 7, structures: Dict = STRUCTURES) -> List[dict]:
    from fastdec.engine.load import make_verifier

    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    src = torch.cat([torch.randint(4, vocab, (src_len,), generator=g), torch.tensor([2])])
    targets = torch.randint(4, vocab, (steps,), generator=g).tolist()
    systems = {}
    for name, (kind, ffn, enc, dec, enc_heads) in structures.items():
        model, _ = build(kind, ffn, enc, dec, enc_heads, embed_dim=embed_dim, heads=heads, vocab=vocab)
        params = sum(p.numel() for p in model.parameters())
        systems[name] = (model, make_verifier(model), params)
    import random
    import statistics

    order = list(systems)
    times = {(n, w): [] for n in systems for w in ("fairseq", "engine")}
    rng = random.Random(0)
    for _ in range(rounds):
        rng.shuffle(order)
        for name in order:
            model, ver, _ = systems[name]
            for way, fn, obj in (("fairseq", fairseq_decode, model), ("engine", engine_decode, ver)):
                t0 = time.perf_counter()
                fn(obj, src, targets)
                times[(name, way)].append(time.perf_counter() - t0)
    base = "transformer_3_3" if "transformer_3_3" in systems else next(iter(systems))
    rows = []
    for name, (_, _, params) in systems.items():
        row = {"structure": name, "params": params}
        for way in ("fairseq", "engine"):
            mine, ref = times[(name, way)], times[(base, way)]
            row[f"{way}_tokens_per_s"] = round(steps / statistics.median(mine), 1)
            row[f"{way}_speedup_vs_{base}"] = round(statistics.median(r / m for r, m in zip(ref, mine)), 3)
        rows.append(row)
    return rows


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--embed-dim", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=8000)
    ap.add_argument("--src-len", type=int, default=20)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--out", help="CSV file")


def main(a: argparse.Namespace) -> int:
    import pandas as pd

    df = pd.DataFrame(measure(a.embed_dim, a.heads, a.vocab, a.src_len, a.steps, a.rounds))
    print(df.to_string(index=False), flush=True)
    print(f"(median of {a.rounds} rounds, {a.steps} output tokens, source {a.src_len} tokens, one thread)")
    if a.out:
        df.to_csv(a.out, index=False)
    return 0

