"""fastdec: lossless fast seq2seq decoding (draft -> verify -> accept) and the workflow's package code."""

__version__ = "0.1.0"
