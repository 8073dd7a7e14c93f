"""Blockwise parallel decoding (Stern et al. 2018) track.

* :mod:`.plan` -- the models (variants of Table 1), their training specs, the benchmark runs and the tables;
* :mod:`.outputs`, :mod:`.tables` -- the paper's tables and figures from the track's benchmark runs (``fastdec
  bench``), the paper's numbers (:mod:`.paper`) beside ours;
* ``schema.yaml`` -- the ``blockwise:`` config section.

The drafter itself is :mod:`fastdec.engine.blockwise_drafter` (registered as ``blockwise``); the model and
its loss are the fairseq plugin's ``blockwise_transformer`` / ``blockwise_cross_entropy``.
"""
