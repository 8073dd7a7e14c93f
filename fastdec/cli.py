"""The ``fastdec`` command (``python -m fastdec``): ``fastdec bench ...``, ``fastdec tables TRACK TABLE ...`` and
``fastdec trace ...`` (one sentence, step by step), ``fastdec report RESULTS... --output page.html`` and
``fastdec selfcheck`` (lossless on this device, on random models, in seconds), ``fastdec gpu-pack`` and
``fastdec gpu-suite`` (a finished run's models to a GPU machine and every GPU figure inside a time limit),
``fastdec gpu-record`` (its output into docs/GPU.md and docs/gpu/).

Known input errors (bad methods, missing files, bad values) print one ``error:`` line and exit 2.
"""
from __future__ import annotations

import argparse
import os
import sys

# fairseq checkpoints are pickled Namespaces: torch >= 2.6 defaults to weights-only loading
os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")


def build_parser() -> argparse.ArgumentParser:
    from fastdec.bench import cli as bench
    from fastdec.bench import convert, gpu_pack, gpu_record, gpu_suite, trace
    from fastdec.engine import selfcheck
    from fastdec.workflow import report_cli as report
    from fastdec.workflow import tables_cli as tables

    ap = argparse.ArgumentParser(prog="fastdec", description=__doc__)
    sub = ap.add_subparsers(dest="command", required=True)
    for name, module in (("bench", bench), ("tables", tables), ("trace", trace), ("report", report),
                         ("ct2-convert", convert), ("selfcheck", selfcheck), ("gpu-pack", gpu_pack),
                         ("gpu-suite", gpu_suite), ("gpu-record", gpu_record)):
        p = sub.add_parser(name, description=module.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(p)
        p.set_defaults(run=module.main)
    return ap


def main(argv=None) -> int:
    a = build_parser().parse_args(argv)
    try:
        return a.run(a) or 0
    except ValueError as e:  # CorpusError and DownloadError are ValueErrors too
        print(f"error: {e}", file=sys.stderr)
        return 2
