"""What the report claims across the papers, above the tracks: the coverage of the papers' tables and figures
(:mod:`.coverage`), the papers' hardware-independent claims checked on a run's tables (:mod:`.orderings`, the claims
by paper in ``checks_*``), the per-paper summary that opens the report (:mod:`.summary`), the GPU rows recorded beside
a table (:mod:`.gpu`), and the report with all of them (:mod:`.report`)."""
