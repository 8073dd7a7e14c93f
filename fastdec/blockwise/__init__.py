"""Blockwise parallel decoding (Stern et al. 2018) track: decoding helpers, evaluation runs, tables.

* :mod:`fastdec.blockwise.decoding` -- build the (drafter, acceptance rule) pair of a setting, decode,
  mean accepted block size.
* :mod:`fastdec.blockwise.evaluate` -- decode a split with several settings of one model in ONE process
  (greedy reference of p_1 included), score BLEU, write one JSON per setting.
* :mod:`fastdec.blockwise.tables` -- the paper's tables and figures from those JSON files and the
  engine benchmark CSVs, with the paper's numbers (:mod:`fastdec.report.paper_blockwise`) beside ours.

The drafter itself is :mod:`fastdec.engine.blockwise_drafter` (registered as ``blockwise``); the model and
its loss are the fairseq plugin's ``blockwise_transformer`` / ``blockwise_cross_entropy``.
"""
