"""Hsu et al. (2020)'s efficient student: L0 head pruning of a gated student (prune.py)."""
