"""The MT track: the MT chain's AT rows of GAD Table 1 (plan.py, outputs.py, tables.py)."""
