"""``fastdec m2score``: MaxMatch (M2) score of tokenised system output against an M2 file (CoNLL-2014 m2scorer
semantics).

Usage: fastdec m2score HYP M2 [--remove-bpe | --gpt2-bpe ENCODER_JSON VOCAB_BPE] [--beta 0.5]
                       [--max-unchanged-words 2] [--ignore-whitespace-casing] [--max-transitive-arcs N]
                       [--json OUT] [--per-sentence]

Prints the official scorer's three lines (Precision / Recall / F_beta, 4 decimals); --json also
writes P, R, F, TP/FP/FN (and, with --per-sentence, each sentence's chosen annotator and edits).
"""
import argparse
import json
import sys


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("hyp", help="system output, one tokenised sentence per line")
    ap.add_argument("m2", help="gold M2 file")
    ap.add_argument("--remove-bpe", action="store_true", help="HYP is BPE'd (subword-nmt @@): join the words first")
    ap.add_argument("--gpt2-bpe", nargs=2, metavar=("ENCODER_JSON", "VOCAB_BPE"),
                    help="HYP is GPT-2 BPE ids (a BART-initialised model): decode them with these files first")
    ap.add_argument("--beta", type=float, default=0.5)
    ap.add_argument("--max-unchanged-words", type=int, default=2)
    ap.add_argument("--ignore-whitespace-casing", action="store_true",
                    help="drop system edits that only change case or spacing (official option)")
    ap.add_argument("--max-transitive-arcs", type=int, default=None,
                    help="guard for outputs unrelated to their source: sentences whose lattice would get "
                         "more transitive arcs are scored approximately (flagged); default: exact")
    ap.add_argument("--json", help="write the scores as JSON here")
    ap.add_argument("--per-sentence", action="store_true", help="include per-sentence stats in --json")


def main(a: argparse.Namespace) -> int:
    from fastdec.eval.m2 import read_hypotheses, read_m2, score
    from fastdec.text import read_lines, remove_bpe

    if a.gpt2_bpe:
        from fastdec.data.gpt2_bpe import decode_lines

        hyps = decode_lines(*a.gpt2_bpe, read_lines(a.hyp))
    else:
        hyps = [remove_bpe(h) for h in read_lines(a.hyp)] if a.remove_bpe else read_hypotheses(a.hyp)
    res = score(hyps, read_m2(a.m2), beta=a.beta, max_unchanged_words=a.max_unchanged_words,
                ignore_whitespace_casing=a.ignore_whitespace_casing, max_transitive_arcs=a.max_transitive_arcs,
                names=(f"hypothesis file {a.hyp}", f"M2 file {a.m2}"))
    if res.approximate_sentences:
        print(f"warning: {res.approximate_sentences} sentence(s) scored approximately "
              f"(lattice over --max-transitive-arcs {a.max_transitive_arcs})", file=sys.stderr)
    print(f"Precision   : {res.precision:.4f}")
    print(f"Recall      : {res.recall:.4f}")
    print(f"F_{a.beta:.1f}       : {res.f:.4f}")
    if a.json:
        d = res.as_dict(per_sentence=a.per_sentence)
        d.update(hyp=a.hyp, m2=a.m2, remove_bpe=a.remove_bpe, gpt2_bpe=bool(a.gpt2_bpe),
                 max_unchanged_words=a.max_unchanged_words,
                 ignore_whitespace_casing=a.ignore_whitespace_casing,
                 max_transitive_arcs=a.max_transitive_arcs)
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(d, f, indent=2, ensure_ascii=False)
    return 0
