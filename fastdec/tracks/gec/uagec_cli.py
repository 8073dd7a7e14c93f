"""``fastdec prepare-uagec``: UA-GEC (installed ua-gec package, offline) -> sentence-level GEC files.

Usage: fastdec prepare-uagec --out DIR [--valid-size 1000] [--seed 1] [--layer gec-only]

Writes DIR/{train,valid}.{src,tgt}, DIR/test.src, DIR/test.ref0, DIR/test.ref1, DIR/test.m2 and
DIR/stats.json (counts).  Tokenisation, M2 construction and the split are described in
fastdec/tracks/gec/uagec.py.
"""
import argparse
import json


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--valid-size", type=int, default=1000,
                    help="sentence pairs carved from train as validation (whole documents; >= this many)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the document order for the validation split")
    ap.add_argument("--layer", default="gec-only", choices=["gec-only", "gec-fluency"],
                    help="ua-gec annotation layer")


def main(a: argparse.Namespace) -> int:
    from fastdec.tracks.gec.uagec import prepare_uagec

    stats = prepare_uagec(a.out, valid_size=a.valid_size, seed=a.seed, layer=a.layer)
    brief = {k: v for k, v in stats.items() if k != "valid_doc_ids"}
    print(json.dumps(brief, ensure_ascii=False), flush=True)
    return 0
