"""GAD / GAD++ track (Xia et al. 2022; Ge et al. 2022, Sec. 3.2 and 4.2): decoding runs, tables and figures.

* :mod:`.systems` -- system names (``at_b5``, ``greedy``, ``nat_k10``, ``gad_k10``, ``gadpp_k10_b3_t1`` ...) and the
  interleaved batch-1 runner that decodes every sentence with every system in one process (same weights).
* :mod:`.scoring` -- detokenised sacreBLEU and the token repetition ratio (Table 9).
* :mod:`.tables` -- Tables 1, 2, 3, 7, 8, 9 with the paper's numbers beside ours; :mod:`.figures` -- Figure 4.
* :mod:`.case_study` -- iteration-by-iteration traces (Table 11); :mod:`.memory` -- peak memory (Table 8).
* :mod:`.init_drafter` -- a drafter checkpoint initialised from the AT verifier (all weights).

The drafter itself lives in :mod:`fastdec.engine.nat_drafter` (registered with the engine as ``gad``).
"""
