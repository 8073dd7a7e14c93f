"""``fastdec bart-init``: build a checkpoint of pretrained BART weights (all, or some decoder layers) for
--finetune-from-model."""
import argparse
import json


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--archive", required=True, help="bart.base.tar.gz / bart.large.tar.gz")
    ap.add_argument("--member", required=True, help="the checkpoint inside it, e.g. bart.base/model.pt")
    ap.add_argument("--decoder-layers", default="", help="comma-separated BART decoder layers to keep (default: all)")
    ap.add_argument("--output", required=True)


def main(a: argparse.Namespace) -> int:
    from fastdec.bart.init import build_bart_init

    keep = [int(x) for x in a.decoder_layers.split(",")] if a.decoder_layers else None
    print(json.dumps(build_bart_init(a.archive, a.member, a.output, decoder_layers=keep), indent=2), flush=True)
