"""fastdec: lossless fast seq2seq decoding (draft -> verify -> accept) and the workflow's package code."""
import os

# The one place of the torch-load setting: fairseq checkpoints are pickled Namespaces, which torch >= 2.6 refuses to
# load by default (weights-only). Every command, library call and child process (fairseq-train, fairseq-generate:
# they inherit the environment) of the package sees it.
os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")

__version__ = "0.1.0"
