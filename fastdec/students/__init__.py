"""Hsu et al. (2020)'s efficient students: L0 head pruning and phase start checkpoints (prune.py), the track's
Tables 1-3 and Figure 2 (tables.py), and the per-token decoder cost of student structures (speed.py)."""
