"""Reference numbers from the papers (../shared/papers), keyed by table and system.

Each entry names the paper table it comes from, so the report can print the paper's figure beside ours.
"""

GAD_TABLE1 = {  # Xia et al. 2022, Table 1: WMT14 En-De, Transformer-base verifier, speed vs beam 5 (V100)
    "teacher_b5": {"label": "Teacher Transformer-big (b=5)", "bleu": 29.31, "speed": None},
    "baseline_b5": {"label": "AT w/o Seq-KD Transformer-base (b=5)", "bleu": 27.76, "speed": 1.0},
    "verifier_b5": {"label": "AT verifier (b=5)", "bleu": 28.89, "speed": 1.0},
    "verifier_b1": {"label": "AT verifier (b=1)", "bleu": 28.73, "speed": 1.1},
    "nat_drafter": {"label": "NAT drafter (k=25)", "bleu": 26.48, "speed": 14.3, "iterations": 1.6},
    "gad": {"label": "GAD (k=25)", "bleu": 28.73, "speed": 3.0, "iterations": 4.9},
    "gad_pp_hq": {"label": "GAD++ (k=25, top-3, tau=1.0)", "bleu": 28.89, "speed": 3.6, "iterations": 4.0},
    "gad_pp_he": {"label": "GAD++ (k=25, top-5, tau=3.0)", "bleu": 28.73, "speed": 4.5, "iterations": 3.1},
}
