"""GAD / GAD++ track (Xia et al. 2022; Ge et al. 2022, Sec. 3.2 and 4.2): what it builds (:mod:`.plan`: the drafter's
training spec, the benchmark runs decoded by the common layer, :mod:`fastdec.bench`, and the tables), and

* :mod:`.outputs` -- writes one table or figure; :mod:`.tables`, :mod:`.figures`, :mod:`.cnndm`,
  :mod:`.hyperparams` -- Tables 1, 2, 3, 7, 8, 9, 10 and Figures 1, 4, 7 (Ge et al. Table 10 on CNN-DM), the paper's
  numbers (:mod:`.paper`) beside ours;
* :mod:`.memory` -- peak memory, one fresh process per method (Table 8); :mod:`.case_study` -- iteration traces
  (Table 11); :mod:`.init_drafter` -- a drafter checkpoint initialised from the AT verifier (all weights);
* ``schema.yaml`` -- the ``gad:`` config section; ``rules.smk`` -- the track's own rules (Tables 8 and 11, the
  drafter's start checkpoint).

The drafter itself lives in :mod:`fastdec.engine.nat_drafter` (registered with the engine as ``gad``).
"""
