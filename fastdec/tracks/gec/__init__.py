"""The GEC track (Ge et al. 2022, Input-guided Aggressive Decoding): what it builds (plan.py), its data (data.py,
corpora.py, uagec.py, chars.py; synthetic pretraining: synthetic.py, pretrain_data.py, pretrain.smk), its rules
(rules.smk), tables and figures (outputs.py, tables.py, figures.py, examples.py, analysis.py, hyperparams.py) and the
paper's numbers (paper.py)."""
