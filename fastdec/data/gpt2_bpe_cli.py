"""``fastdec gpt2-bpe``: apply GPT-2 byte-level BPE (BART's vocabulary) to a text file: one line of BPE ids per input
line."""
import argparse


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--encoder-json", required=True)
    ap.add_argument("--vocab-bpe", required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--max-tokens", type=int, default=None, help="keep the first N BPE tokens of each line")


def main(a: argparse.Namespace) -> int:
    from fastdec.data.gpt2_bpe import encode_file

    n = encode_file(a.encoder_json, a.vocab_bpe, a.input, a.output, a.max_tokens)
    print(f"{a.input}: {n} lines -> {a.output}", flush=True)
