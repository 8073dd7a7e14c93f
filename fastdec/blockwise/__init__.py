"""Blockwise parallel decoding (Stern et al. 2018) track.

* :mod:`fastdec.blockwise.decoding` -- decode one sentence with a combined scoring/proposal model.
* :mod:`fastdec.blockwise.tables` -- the paper's tables and figures from the track's benchmark runs
  (``fastdec bench``, planned by :mod:`fastdec.tracks.blockwise`), the paper's numbers
  (:mod:`fastdec.report.paper_blockwise`) beside ours.

The drafter itself is :mod:`fastdec.engine.blockwise_drafter` (registered as ``blockwise``); the model and
its loss are the fairseq plugin's ``blockwise_transformer`` / ``blockwise_cross_entropy``.
"""
