"""``fastdec ct2-convert``: convert a fairseq checkpoint for the ``ct2`` methods (CTranslate2's own fairseq
converter; float32 weights, int8 chosen when the model is loaded). The workflow's ``ct2_convert`` rule runs it.

Example::

    fastdec ct2-convert --checkpoint models/verifier/model.pt --data-bin data-bin/distill --source-lang en \\
        --target-lang de --output-dir models/verifier/ct2
"""
from __future__ import annotations

import argparse


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--data-bin", required=True, help="the folder with dict.<lang>.txt of both languages")
    ap.add_argument("--source-lang", required=True)
    ap.add_argument("--target-lang", required=True)
    ap.add_argument("--output-dir", required=True)
    ap.add_argument("--user-dir", help="fairseq --user-dir plugin of the model's architecture")


def main(a: argparse.Namespace) -> int:
    from fastdec.engine.ctranslate2_backend import convert

    convert(a.checkpoint, a.data_bin, a.output_dir, source_lang=a.source_lang, target_lang=a.target_lang,
            user_dir=a.user_dir, force=True)
    print(f"converted {a.checkpoint} -> {a.output_dir}")
    return 0
