"""The ``fastdec`` command (``python -m fastdec``): every step of the workflow and every tool around it.

Each subcommand is a small module beside the logic it calls, with ``add_arguments(parser)`` and ``main(args)``.
Only the chosen subcommand's module is imported (``fastdec --help`` loads no torch or fairseq). Known input errors
(bad methods, missing files, bad values, failed downloads) print one ``error:`` line and exit 2.
"""
from __future__ import annotations

import argparse
import importlib
import sys


# name -> (module, one line for `fastdec --help`)
COMMANDS = {
    # the workflow's steps (the Snakemake rules call these)
    "fetch-archive": ("fastdec.data.fetch_cli", "download one archive named in the config"),
    "prepare-data": ("fastdec.data.prepare_cli", "check and clean one split of a parallel corpus"),
    "tokenize-text": ("fastdec.data.tokenize_cli", "Moses-normalise and tokenise a text file"),
    "bpe": ("fastdec.data.bpe_cli", "learn or apply a joint subword-nmt BPE model"),
    "gpt2-bpe": ("fastdec.data.gpt2_bpe_cli", "apply GPT-2 byte-level BPE (BART's vocabulary) to a text file"),
    "distill": ("fastdec.distill_cli", "sequence-level knowledge distillation: shard, translate, gather"),
    "train": ("fastdec.train_cli", "train one fairseq model from a JSON training spec"),
    "bart-init": ("fastdec.bart.init_cli", "a checkpoint of pretrained BART weights for --finetune-from-model"),
    "fairseq-decode": ("fastdec.fairseq_decode_cli", "decode a binarised split with fairseq-generate"),
    "score": ("fastdec.eval.score_cli", "BLEU, speed and identical-to-greedy count of one system"),
    "m2score": ("fastdec.eval.m2_cli", "MaxMatch (M2) score of system output against an M2 file"),
    "sari-score": ("fastdec.eval.sari_cli", "SARI and multi-reference BLEU of one system's output"),
    "gec-data": ("fastdec.tracks.gec.data_cli", "the GEC track's data steps (select, bea19, wikilarge, nlpcc18, head)"),
    "prepare-uagec": ("fastdec.tracks.gec.uagec_cli", "UA-GEC to sentence-level GEC files"),
    "gec-synthetic": ("fastdec.tracks.gec.synthetic_cli", "synthetic GEC pretraining data: split, confusion, corrupt"),
    "gad-init-drafter": ("fastdec.tracks.gad.init_drafter_cli", "a NAT drafter initialised from the verifier"),
    "gad-memory": ("fastdec.tracks.gad.memory_cli", "GAD Table 8: peak memory per decoding method"),
    "gad-case-study": ("fastdec.tracks.gad.case_study_cli", "GAD Table 11: GAD and GAD++ iteration by iteration"),
    "students-warm-start": ("fastdec.tracks.students.warm_start", "a student's first checkpoint from the verifier"),
    "students-prune": ("fastdec.tracks.students.prune", "cut the heads an L0-trained student switched off"),
    "students-speed": ("fastdec.tracks.students.speed", "decoder speed of the student structures, random weights"),
    "superres-data": ("fastdec.tracks.superres.images", "super-resolution pairs: image patches or CelebA faces"),
    "bench": ("fastdec.bench.cli", "decode one input with several methods and write a results run"),
    "trace": ("fastdec.bench.trace", "one sentence, step by step, with one drafting method"),
    "tables": ("fastdec.workflow.tables_cli", "write one table or figure of a track from the results"),
    "report": ("fastdec.workflow.report_cli", "the report: one experiment's Markdown and HTML, or several on one page"),
    # tools around the workflow
    "selfcheck": ("fastdec.engine.selfcheck", "is decoding lossless on this device? (random models, seconds)"),
    "verify-cost": ("fastdec.engine.verify_cost_cli", "cost of one verifier pass vs the number of tokens it checks"),
    "ct2-convert": ("fastdec.bench.convert", "convert a fairseq checkpoint for the ct2 methods"),
    "gpu-pack": ("fastdec.workflow.gpu_pack", "what a GPU benchmark needs from a finished run, in one folder"),
    "gpu-suite": ("fastdec.bench.gpu_suite", "every GPU figure from a pack inside a time limit"),
    "gpu-wheels": ("fastdec.workflow.gpu_wheels", "a wheelhouse for a GPU machine without a package registry"),
    "gpu-record": ("fastdec.workflow.gpu_record", "a GPU run into docs/GPU.md and docs/gpu/ (and its targets)"),
    "build-libreoffice-corpus": ("fastdec.data.libreoffice_cli", "rebuild the embedded English-German corpus"),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``command``, only that subcommand's module is imported (and given its arguments)."""
    ap = argparse.ArgumentParser(prog="fastdec", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, summary) in COMMANDS.items():
        if command is not None and name != command:
            sub.add_parser(name, help=summary)
            continue
        module = importlib.import_module(module_name)
        p = sub.add_parser(name, help=summary, description=module.__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(p)
        p.set_defaults(run=module.main)
    return ap


def _known_input_errors() -> tuple:
    from fastdec.data.download import DownloadError

    return ValueError, DownloadError  # CorpusError is a ValueError


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else [str(x) for x in argv]
    command = argv[0] if argv and argv[0] in COMMANDS else ""
    a = build_parser(command).parse_args(argv)
    try:
        return a.run(a) or 0
    except _known_input_errors() as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
