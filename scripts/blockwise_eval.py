#!/usr/bin/env python
"""Decode a split with one blockwise model: greedy (p_1) and blockwise settings in one process; BLEU and block sizes.

Settings are labels ``k<K>[-top<T>][-min<L>]`` (exact, top-T approximate, minimum block size L), e.g.
``k4,k4-top2,k4-top3,k4-min2``. Writes one JSON with a row per setting (plus ``greedy``) and, with
``--hyp-dir``, the BPE'd hypotheses of each setting as ``<hyp-dir>/<label>.txt``.

Example::

    blockwise_eval.py --checkpoint bw_k4.pt --data-bin data-bin/raw --input data/bpe/valid.en \\
        --ref data/raw/valid.de --lang de --settings k4,k4-top2 --output eval.json --threads 1
"""
import argparse
import json
import sys
from pathlib import Path

from _common import run_cli


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True, help="blockwise_transformer checkpoint")
    ap.add_argument("--data-bin", required=True, help="folder with the dictionaries")
    ap.add_argument("--input", required=True, help="BPE'd source sentences, one per line")
    ap.add_argument("--ref", help="raw (untokenised) references for BLEU")
    ap.add_argument("--lang", help="target language (detokeniser); needed with --ref")
    ap.add_argument("--settings", required=True, help="comma-separated settings, e.g. k4,k4-top2,k4-min2")
    ap.add_argument("--beams", default="", help="comma-separated fairseq beam sizes decoded as baselines (e.g. 5)")
    ap.add_argument("--limit", type=int, help="only the first N sentences (and references)")
    ap.add_argument("--max-len-a", type=float, default=1.2)
    ap.add_argument("--max-len-b", type=int, default=10)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    ap.add_argument("--head-precision", choices=["float", "int8"], default="float",
                    help="precision of the proposal heads (int8: CPU only; verification stays in --dtype)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=2, help="untimed warm-up sentences (default 2)")
    ap.add_argument("--meta", action="append", default=[], metavar="KEY=VALUE",
                    help="extra fields copied into the output JSON (repeatable)")
    ap.add_argument("--output", required=True, help="result JSON")
    ap.add_argument("--hyp-dir", help="write <label>.txt hypotheses (BPE'd) here")
    a = ap.parse_args(argv)
    if a.threads < 1:
        raise ValueError(f"--threads must be >= 1, got {a.threads}")
    if a.limit is not None and a.limit < 1:
        raise ValueError(f"--limit must be >= 1, got {a.limit}")
    if a.ref and not a.lang:
        raise ValueError("--ref needs --lang (the detokeniser's language)")
    meta = {}
    for item in a.meta:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--meta expects KEY=VALUE, got {item!r}")
        meta[key] = value

    import torch

    from fastdec.blockwise.decoding import parse_setting
    from fastdec.blockwise.evaluate import evaluate_settings
    from fastdec.data.parallel import read_lines, write_lines
    from fastdec.engine.blockwise_drafter import blockwise_head_of
    from fastdec.engine.load import load_model

    settings = [parse_setting(s) for s in a.settings.split(",") if s.strip()]
    try:
        beams = [int(b) for b in a.beams.split(",") if b.strip()]
    except ValueError:
        raise ValueError(f"--beams must be comma-separated integers, got {a.beams!r}") from None
    if not settings:
        raise ValueError("--settings is empty")
    torch.set_num_threads(a.threads)
    lines = read_lines(a.input)
    refs = read_lines(a.ref) if a.ref else None
    if refs is not None and len(refs) != len(lines):
        raise ValueError(f"{a.ref}: {len(refs)} references for {len(lines)} source lines in {a.input}")
    if a.limit:
        lines = lines[: a.limit]
        refs = refs[: a.limit] if refs is not None else None
    loaded = load_model(a.checkpoint, a.data_bin, device=a.device, dtype=a.dtype)
    trained_k = blockwise_head_of(loaded.model).block_size
    too_big = [s.label for s in settings if s.k > trained_k]
    if too_big:
        raise ValueError(f"settings {too_big} need more heads than the model's block size {trained_k}")
    sources = [loaded.encode(line) for line in lines]
    results = evaluate_settings(loaded, sources, settings, max_len_a=a.max_len_a, max_len_b=a.max_len_b,
                                refs=refs, lang=a.lang, warmup=min(a.warmup, len(sources)),
                                head_precision=a.head_precision, beams=beams)
    if a.hyp_dir:
        for label, r in results.items():
            write_lines(Path(a.hyp_dir) / f"{label}.txt", r["hyps"])
    rows = []
    for label, r in results.items():
        rows.append({k: v for k, v in r.items() if k not in ("hyps", "tokens_ids")})
    doc = {**meta, "checkpoint": a.checkpoint, "trained_block_size": trained_k, "input": a.input,
           "n_sentences": len(sources), "threads": torch.get_num_threads(), "device": str(loaded.device),
           "dtype": a.dtype, "head_precision": a.head_precision, "max_len_a": a.max_len_a, "max_len_b": a.max_len_b, "results": rows}
    Path(a.output).parent.mkdir(parents=True, exist_ok=True)
    Path(a.output).write_text(json.dumps(doc, indent=2))
    for r in rows:
        print(f"{r['label']:>16}: BLEU {r.get('bleu', float('nan')):6.2f}  block {r['mean_block'] or 1:.2f}  "
              f"identical {r['identical_pct']:5.1f}%  {r['ms_per_sentence']:7.2f} ms/sent  "
              f"speedup vs greedy {r['speedup_vs_greedy']:.2f}x", file=sys.stderr)
    return 0


if __name__ == "__main__":
    run_cli(main)
