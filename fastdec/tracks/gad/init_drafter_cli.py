"""``fastdec gad-init-drafter``: build a NAT drafter checkpoint initialised from all weights of the AT verifier (for
--finetune-from-model)."""
import argparse
import json


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--verifier", required=True, help="AT verifier checkpoint")
    ap.add_argument("--dict", required=True, help="target dictionary of the data-bin (dict.<tgt>.txt)")
    ap.add_argument("--output", required=True)
    ap.add_argument("--seed", type=int, default=1)


def main(a: argparse.Namespace) -> int:
    from fastdec.tracks.gad.init_drafter import build_init_checkpoint

    print(json.dumps(build_init_checkpoint(a.verifier, a.dict, a.output, seed=a.seed), indent=2), flush=True)
