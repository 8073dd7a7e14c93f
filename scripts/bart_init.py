#!/usr/bin/env python
"""Build a checkpoint of pretrained BART weights (all, or some decoder layers) for --finetune-from-model."""
import argparse
import json

from _common import run_cli


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--archive", required=True, help="bart.base.tar.gz / bart.large.tar.gz")
    ap.add_argument("--member", required=True, help="the checkpoint inside it, e.g. bart.base/model.pt")
    ap.add_argument("--decoder-layers", default="", help="comma-separated BART decoder layers to keep (default: all)")
    ap.add_argument("--output", required=True)
    a = ap.parse_args()
    from fastdec.bart.init import build_bart_init

    keep = [int(x) for x in a.decoder_layers.split(",")] if a.decoder_layers else None
    print(json.dumps(build_bart_init(a.archive, a.member, a.output, decoder_layers=keep), indent=2), flush=True)


if __name__ == "__main__":
    run_cli(main)
