"""Cluster support: a real single-node SLURM on this machine for testing `profiles/slurm` (local_slurm.py)."""
