"""``fastdec bpe``: learn a joint BPE model (subword-nmt) on the tokenised training sides, or apply one."""
import argparse


def add_arguments(ap: argparse.ArgumentParser) -> None:
    sub = ap.add_subparsers(dest="cmd", required=True)
    learn = sub.add_parser("learn")
    learn.add_argument("--inputs", nargs="+", required=True)
    learn.add_argument("--merges", type=int, required=True)
    learn.add_argument("--min-frequency", type=int, default=2)
    learn.add_argument("--codes", required=True)
    apply = sub.add_parser("apply")
    apply.add_argument("--codes", required=True)
    apply.add_argument("--input", required=True)
    apply.add_argument("--output", required=True)


def main(a: argparse.Namespace) -> int:
    from fastdec.data.bpe import apply_bpe, learn_joint_bpe

    if a.cmd == "learn":
        learn_joint_bpe(a.inputs, a.codes, a.merges, a.min_frequency)
    else:
        apply_bpe(a.codes, a.input, a.output)
