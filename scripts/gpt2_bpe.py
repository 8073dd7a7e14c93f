#!/usr/bin/env python
"""Apply GPT-2 byte-level BPE (BART's vocabulary) to a text file: one line of BPE ids per input line."""
import argparse

from _common import run_cli


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--encoder-json", required=True)
    ap.add_argument("--vocab-bpe", required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--max-tokens", type=int, default=None, help="keep the first N BPE tokens of each line")
    a = ap.parse_args()
    from fastdec.data.gpt2_bpe import encode_file

    n = encode_file(a.encoder_json, a.vocab_bpe, a.input, a.output, a.max_tokens)
    print(f"{a.input}: {n} lines -> {a.output}", flush=True)


if __name__ == "__main__":
    run_cli(main)
