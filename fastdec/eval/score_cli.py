"""``fastdec score``: score one system: sacreBLEU, speed from the timing files, identical-to-greedy count."""
import argparse
import json


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--system", required=True)
    ap.add_argument("--hyp", required=True)
    ap.add_argument("--ref", required=True)
    ap.add_argument("--timing", required=True)
    ap.add_argument("--latency", required=True)
    ap.add_argument("--greedy", required=True, help="the verifier's greedy output (tokenised)")
    ap.add_argument("--tok", required=True, help="this system's tokenised output")
    ap.add_argument("--output", required=True)


def main(a: argparse.Namespace) -> int:
    from fastdec.data.parallel import read_lines
    from fastdec.eval.bleu import corpus_bleu, identical_count

    hyps, refs = read_lines(a.hyp), read_lines(a.ref)
    result = {"system": a.system, **corpus_bleu(hyps, refs)}
    timing = json.load(open(a.timing))
    latency = json.load(open(a.latency))
    tok, greedy = read_lines(a.tok), read_lines(a.greedy)
    result.update(
        sentences=len(hyps),
        sentences_per_s=timing.get("sentences_per_s"),
        latency_ms=latency.get("latency_ms"),
        latency_sentences=latency.get("sentences"),
        identical_to_greedy=identical_count(tok, greedy),
        beam=timing.get("beam"),
        device=timing.get("device"),
    )
    json.dump(result, open(a.output, "w"), indent=2)
    print(json.dumps(result), flush=True)
