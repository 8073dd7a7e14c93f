"""Reference numbers of the GAD paper (Xia et al. 2022, ../shared/papers/gad-lossless-speedup-translation.txt)
and of its journal version (Ge et al. 2022, aggressive-decoding-iad-gad.txt, Table 14) beyond Table 1.

All numbers: WMT14 En-De (newstest2013 = dev,
newstest2014 = test), Transformer-base drafter and verifier, speed vs beam 5 on one P100 GPU unless noted (Xia Sec. 4.1).
"""

# Table 2: block size k on the development set, GAD++ (top-3, tau=1.0). tok = mean accepted tokens per iteration.
GAD_TABLE2 = {
    "at_b5": {"tok": 1.00, "bleu": 26.72, "speed": 1.00},
    10: {"tok": 5.97, "bleu": 26.68, "speed": 3.04},
    15: {"tok": 6.74, "bleu": 26.94, "speed": 3.47},
    20: {"tok": 7.24, "bleu": 26.75, "speed": 3.55},
    25: {"tok": 7.56, "bleu": 26.92, "speed": 3.79},
    30: {"tok": 7.44, "bleu": 26.75, "speed": 3.63},
}

# Table 3: GAD++ (k=25) on the development set, (beta, tau) -> (mean accepted tokens, BLEU); greedy BLEU 26.62.
GAD_TABLE3 = {
    (3, 1.0): (7.56, 27.02), (3, 2.0): (8.64, 26.92), (3, 3.0): (9.46, 26.84), (3, 4.0): (10.04, 26.78),
    (3, 5.0): (10.38, 26.70),
    (5, 1.0): (7.58, 27.02), (5, 2.0): (8.77, 26.92), (5, 3.0): (9.72, 26.84), (5, 4.0): (10.50, 26.74),
    (5, 5.0): (10.99, 26.64),
}
GAD_TABLE3_GREEDY_BLEU = 26.62

# Footnote 8: mean accepted tokens per iteration on the development set, k = 25: vanilla GAD, GAD++ (its 10.99 is the
# top-5, tau = 5.0 cell of Table 3, not the high-efficiency setting tau = 3.0, 9.72) and Blockwise (Stern et al.).
GAD_DEV_ACCEPTED = {"gad": 6.13, "gad_pp_top5_tau5": 10.99, "blockwise": 1.90}
GAD_DEV_ACCEPTED_K = 25

# Table 7: profiling of GAD++ (k=25, top-5, tau=3.0) on the test set (latency per sentence in ms, percent).
GAD_TABLE7 = {
    "at_encoder": (5.65, 7.70),
    "nat_encoder": (5.73, 7.80),
    "nat_decoder": (31.44, 42.81),
    "at_decoder": (27.33, 37.21),
    "others": (3.31, 4.48),
    "total": (73.46, 100.0),
}

# Table 8: peak GPU memory (MiB, % of the 16,280 MiB P100), fp32; GAD++ = top-5, tau=3.0.
GAD_TABLE8 = {
    "at_b5": (1237, 7.4),
    "greedy": (1211, 7.6),
    "gad": (1621, 10.0),
    "gadpp": (1613, 9.9),
}
GAD_TABLE8_TOTAL_MIB = 16280

# Table 9: token repetition ratio (percent) on the WMT14 En-De test set; GAD++ = k=25, top-3, tau=1.0.
GAD_TABLE9 = {
    "greedy": {"bleu": 28.73, "rep": 0.18},
    "cmlm_t4": {"bleu": 25.75, "rep": 1.13, "label": "CMLM (T=4)"},
    "cmlm_t10": {"bleu": 27.09, "rep": 0.24, "label": "CMLM (T=10)"},
    "gad": {"bleu": 28.73, "rep": 0.18},
    "gadpp_hq": {"bleu": 28.89, "rep": 0.17},
}

# Table 10: NAT drafter training hyperparameters (right column), and the AT verifier's (left column).
GAD_TABLE10_DRAFTER = {
    "label_smoothing": 0.1, "max_tokens": 4096, "update_freq": 4, "dropout": 0.1, "max_source_positions": 1000,
    "max_target_positions": 1000, "lr": 5e-4, "adam_betas": "(0.9, 0.999)", "adam_eps": 1e-6,
    "lr_scheduler": "inverse_sqrt", "warmup_init_lr": 1e-7, "weight_decay": 0.01, "clip_norm": 5.0,
    "warmup_updates": 10000, "max_update": 300000, "gpus": 8, "block_size": 25,
}
GAD_TABLE10_VERIFIER = {
    "label_smoothing": 0.1, "max_tokens": 20000, "update_freq": 4, "dropout": [0.1, 0.2, 0.3],
    "max_source_positions": 1000, "max_target_positions": 1000, "lr": 1e-3, "adam_betas": "(0.9, 0.99)",
    "lr_scheduler": "inverse_sqrt", "warmup_init_lr": 1e-7, "weight_decay": 1e-5, "clip_norm": 3.0,
    "warmup_updates": 4000, "max_update": 100000, "gpus": 8,
}

# Ge et al. 2022, Table 14 (and Table 5 for the beam-5 verifier): WMT14 En<->De and WMT16 En<->Ro (BLEU,
# iterations, speed vs beam 5; the GAD++ (beta, tau) tuned per direction). The Table 1 reference of a config is
# chosen by its gad.paper_reference (default wmt14_en-de = GAD paper Table 1).
GAD_TABLE14 = {
    "wmt14_en-de": {
        "verifier_b5": {"bleu": 28.89, "speed": 1.0},
        "verifier_b1": {"bleu": 28.73, "speed": 1.1},
        "nat_drafter": {"bleu": 26.48, "iterations": 1.6, "speed": 14.3},
        "gad": {"bleu": 28.73, "iterations": 4.9, "speed": 3.0},
        "gad_pp_hq": {"bleu": 28.89, "iterations": 4.0, "speed": 3.6, "beta": 3, "tau": 1.0},
        "gad_pp_he": {"bleu": 28.73, "iterations": 3.1, "speed": 4.5, "beta": 5, "tau": 3.0},
    },
    "wmt14_de-en": {
        "verifier_b5": {"bleu": 32.53, "speed": 1.0},
        "verifier_b1": {"bleu": 32.18, "speed": 1.1},
        "nat_drafter": {"bleu": 30.23, "iterations": 1.5, "speed": 14.0},
        "gad": {"bleu": 32.18, "iterations": 4.4, "speed": 3.0},
        "gad_pp_hq": {"bleu": 32.56, "iterations": 3.4, "speed": 3.9, "beta": 3, "tau": 1.0},
        "gad_pp_he": {"bleu": 32.19, "iterations": 2.5, "speed": 4.8, "beta": 5, "tau": 3.0},
    },
    "wmt16_en-ro": {
        "verifier_b5": {"bleu": 34.96, "speed": 1.0},
        "verifier_b1": {"bleu": 34.83, "speed": 1.1},
        "nat_drafter": {"bleu": 32.08, "iterations": 1.6, "speed": 13.3},
        "gad": {"bleu": 34.83, "iterations": 6.4, "speed": 2.2},
        "gad_pp_hq": {"bleu": 35.32, "iterations": 4.5, "speed": 3.1, "beta": 5, "tau": 4.0},
        "gad_pp_he": {"bleu": 34.92, "iterations": 4.0, "speed": 3.3, "beta": 5, "tau": 6.0},
    },
    "wmt16_ro-en": {
        "verifier_b5": {"bleu": 34.86, "speed": 1.0},
        "verifier_b1": {"bleu": 34.65, "speed": 1.1},
        "nat_drafter": {"bleu": 32.21, "iterations": 1.6, "speed": 13.8},
        "gad": {"bleu": 34.65, "iterations": 5.9, "speed": 2.4},
        "gad_pp_hq": {"bleu": 34.98, "iterations": 4.6, "speed": 2.9, "beta": 3, "tau": 2.0},
        "gad_pp_he": {"bleu": 34.80, "iterations": 4.0, "speed": 3.3, "beta": 5, "tau": 3.0},
    },
}


# Xia et al. 2022, Table 1: WMT14 En-De, Transformer-base verifier, speed vs beam 5 (P100)
GAD_TABLE1 = {  # Xia et al. 2022, Table 1: WMT14 En-De, Transformer-base verifier, speed vs beam 5 (P100)
    "teacher_b5": {"label": "Teacher Transformer-big (b=5)", "bleu": 29.31, "speed": None},
    "baseline_b5": {"label": "AT w/o Seq-KD Transformer-base (b=5)", "bleu": 27.76, "speed": 1.0},
    "verifier_b5": {"label": "AT verifier (b=5)", "bleu": 28.89, "speed": 1.0},
    "verifier_b1": {"label": "AT verifier (b=1)", "bleu": 28.73, "speed": 1.1},
    "nat_drafter": {"label": "NAT drafter (k=25)", "bleu": 26.48, "speed": 14.3, "iterations": 1.6},
    "gad": {"label": "GAD (k=25)", "bleu": 28.73, "speed": 3.0, "iterations": 4.9},
    "gad_pp_hq": {"label": "GAD++ (k=25, top-3, tau=1.0)", "bleu": 28.89, "speed": 3.6, "iterations": 4.0},
    "gad_pp_he": {"label": "GAD++ (k=25, top-5, tau=3.0)", "bleu": 28.73, "speed": 4.5, "iterations": 3.1},
}

# Xia et al. 2022, Table 1 (WMT14 En-De): group, system, iterations, BLEU, speedup over beam 5 (None: "/");
# Imputer's speedup is against greedy decoding (the paper's dagger)
GAD_TABLE1_NAT = [
    ("Fully NAT", "NAT w/ Fertility (Gu et al., 2018)", "1", 17.69, 15.6),
    ("Fully NAT", "CTC (Libovický and Helcl, 2018)", "1", 16.56, None),
    ("Fully NAT", "Bag-of-ngrams (Shao et al., 2020)", "1", 20.90, 10.8),
    ("Fully NAT", "AXE (Ghazvininejad et al., 2020a)", "1", 23.53, None),
    ("Fully NAT", "GLAT (Qian et al., 2021)", "1", 25.21, 15.3),
    ("Fully NAT", "AligNART (Song et al., 2021)", "1", 26.40, 13.4),
    ("Iterative NAT", "iNAT (Lee et al., 2018)", "10", 21.61, None),
    ("Iterative NAT", "CMLM (Ghazvininejad et al., 2019)", "10", 27.03, 1.7),
    ("Iterative NAT", "LevT (Gu et al., 2019)", "2.1", 27.27, 4.0),
    ("Iterative NAT", "SMART (Ghazvininejad et al., 2020b)", "10", 27.65, 1.7),
    ("Iterative NAT", "DisCo (Kasai et al., 2020)", "4.8", 27.34, 3.5),
    ("Iterative NAT", "Imputer (Saharia et al., 2020; speedup vs greedy)", "8", 28.20, 3.9),
    ("Iterative NAT", "RewriteNAT (Geng et al., 2021)", "2.7", 27.83, 3.1),
    ("Iterative NAT", "SUNDAE (Savinov et al., 2021)", "16", 28.46, 1.4),
]


def gad_table1_rows(label_col: str = "label") -> list:
    return [{label_col: f"{group}: {system}", "paper_iterations": it, "paper_bleu": bleu, "paper_speed": speed}
            for group, system, it, bleu, speed in GAD_TABLE1_NAT]
