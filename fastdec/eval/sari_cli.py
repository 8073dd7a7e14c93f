"""``fastdec sari-score``: SARI and multi-reference BLEU of one system's output (simplification; Ge et al. Table 4,
Wikilarge columns).

Usage: fastdec sari-score HYP --source SRC --refs REFS [--remove-bpe] --json OUT
  HYP, SRC: one tokenised sentence per line; REFS: one line per sentence, its references separated by tabs.
Logic: fastdec/eval/sari.py.
"""
import argparse
import json


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("hyp")
    ap.add_argument("--source", required=True)
    ap.add_argument("--refs", required=True)
    ap.add_argument("--remove-bpe", action="store_true", help="HYP is BPE'd (subword-nmt @@): join the words first")
    ap.add_argument("--json", required=True)


def main(a: argparse.Namespace) -> int:
    from fastdec.eval.sari import corpus_sari, multi_bleu, read_references
    from fastdec.text import read_lines, remove_bpe

    hyps = read_lines(a.hyp)
    hyps = [remove_bpe(h) for h in hyps] if a.remove_bpe else hyps
    src, refs = read_lines(a.source), read_references(a.refs)
    if not len(hyps) == len(src) == len(refs):
        raise ValueError(f"{a.hyp} has {len(hyps)} lines, {a.source} {len(src)}, {a.refs} {len(refs)}: they must be "
                         f"parallel (rerun the benchmark run)")
    out = {"sari": round(corpus_sari(src, hyps, refs), 2), "sari_definition": "Xu et al. 2016 SARIsent, corpus mean",
           **multi_bleu(hyps, refs), "sentences": len(hyps), "references": len(refs[0]) if refs else 0}
    with open(a.json, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=2)
        f.write("\n")
    print(json.dumps(out), flush=True)
    return 0
