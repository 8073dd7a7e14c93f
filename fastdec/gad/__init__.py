"""GAD / GAD++ track (Xia et al. 2022; Ge et al. 2022, Sec. 3.2 and 4.2). Its benchmark runs and tables are data in
:mod:`fastdec.tracks.gad` (decoded by the common layer, :mod:`fastdec.bench`); here:

* :mod:`.tables` -- Tables 1, 2, 3, 7, 8, 9 and Figure 4 from benchmark runs, the paper's numbers beside ours;
* :mod:`.memory` -- peak memory, one fresh process per method (Table 8); :mod:`.case_study` -- iteration traces
  (Table 11); :mod:`.init_drafter` -- a drafter checkpoint initialised from the AT verifier (all weights).

The drafter itself lives in :mod:`fastdec.engine.nat_drafter` (registered with the engine as ``gad``).
"""
