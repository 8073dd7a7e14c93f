"""Hsu et al. (2020)'s efficient students: what the track builds (plan.py), L0 head pruning and phase start
checkpoints (prune.py, warm_start.py, rules.smk), the track's Tables 1-3 and Figure 2 (outputs.py, tables.py), and the
per-token decoder cost of student structures (speed.py)."""
