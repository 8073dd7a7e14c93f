"""``fastdec verify-cost``: cost of one verifier pass vs the number of tokens it checks (k = 1 .. 32), on a checkpoint
or a random model.

Reads against the benchmark tables: a draft-and-verify method that accepts T tokens per iteration is about
T / cost_vs_k1(k) times faster than greedy. On a GPU cost_vs_k1 stays near 1; on a CPU it grows with k, the
more so the smaller the model (see docs/PERFORMANCE.md).

Examples::

    fastdec verify-cost --checkpoint results/demo/gec/model/model.pt --data-bin results/demo/gec/data-bin --csv c.csv
    fastdec verify-cost --random big --vocab 32000 --threads 1 --csv big.csv     # Transformer-big, random weights
"""
import argparse
import csv
import sys


# random-weight presets: (layers, embed dim, ffn dim, heads)
PRESETS = {"demo": (3, 256, 1024, 4), "base": (6, 512, 2048, 8), "big": (6, 1024, 4096, 16)}


def add_arguments(ap: argparse.ArgumentParser) -> None:
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--checkpoint", help="fairseq checkpoint (needs --data-bin)")
    src.add_argument("--random", choices=sorted(PRESETS), help="random-weight Transformer of this size")
    ap.add_argument("--data-bin", help="folder with the checkpoint's dictionaries")
    ap.add_argument("--vocab", type=int, default=8000, help="--random: vocabulary size (default 8000)")
    ap.add_argument("--ks", default="1,2,4,8,12,16,24,32", help="comma-separated pass lengths")
    ap.add_argument("--src-len", type=int, default=25, help="source length in tokens (default 25)")
    ap.add_argument("--prefix-len", type=int, default=8, help="cached target prefix (default 8)")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16", "float64"])
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (CPU; default 1)")
    ap.add_argument("--backend", default="torch", choices=["torch", "fast", "fast-int8"],
                    help="verifier implementation (default torch, the PyTorch reference; fast: the C passes)")
    ap.add_argument("--csv", required=True)


def main(a: argparse.Namespace) -> int:
    if a.checkpoint and not a.data_bin:
        raise ValueError("--checkpoint needs --data-bin (the folder with its dictionaries)")
    if a.threads < 1 or a.src_len < 1 or a.vocab < 8:
        raise ValueError("--threads and --src-len must be >= 1, --vocab >= 8")
    try:
        ks = [int(k) for k in a.ks.split(",") if k.strip()]
    except ValueError:
        raise ValueError(f"--ks must be comma-separated integers, got {a.ks!r}") from None
    import torch

    from fastdec.engine.profile import verify_cost
    from fastdec.engine.load import make_verifier
    from fastdec.engine.verifier import resolve_device_dtype

    torch.set_num_threads(a.threads)
    device, dtype = resolve_device_dtype(a.device, a.dtype)
    if a.checkpoint:
        from fastdec.engine.load import load_model

        loaded = load_model(a.checkpoint, a.data_bin, device=a.device, dtype=a.dtype)
        model, d, name = loaded.model, loaded.tgt_dict, a.checkpoint
    else:
        from fastdec.engine.profile import build_random_transformer

        layers, dim, ffn, heads = PRESETS[a.random]
        model, d, _ = build_random_transformer(n_symbols=a.vocab - 4, layers=layers, embed_dim=dim, ffn_dim=ffn,
                                               heads=heads, share_all_embeddings=True, max_positions=1024,
                                               dtype=dtype)
        name = f"random {a.random} ({layers}+{layers} x {dim}/{ffn}/{heads}, vocab {len(d)})"
    verifier = make_verifier(model, device=device, dtype=dtype, backend=a.backend)
    g = torch.Generator().manual_seed(0)
    src = torch.cat([torch.randint(d.nspecial, len(d), (a.src_len,), generator=g), torch.tensor([d.eos()])])
    rows = verify_cost(verifier, src, ks, prefix_len=a.prefix_len, repeats=a.repeats)
    params = sum(p.numel() for p in model.parameters())
    with open(a.csv, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=["model", "params_m", "vocab", "device", "dtype", "backend", "threads", "k",
                                          "ms_per_pass", "ms_per_token", "cost_vs_k1"])
        w.writeheader()
        for r in rows:
            w.writerow({"model": name, "params_m": round(params / 1e6, 1), "vocab": len(d),
                        "device": str(device), "dtype": a.dtype, "backend": verifier.backend,
                        "threads": torch.get_num_threads(),
                        **{k: round(v, 3) for k, v in r.items() if k != "k"}, "k": r["k"]})
            print(f"k={r['k']:3d}  {r['ms_per_pass']:8.2f} ms/pass  {r['cost_vs_k1']:5.2f}x a one-token pass",
                  file=sys.stderr)
    return 0
