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
GAD_TABLE3_K = 25

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


# Xia et al. 2022, Table 4 (= Ge et al. Table 8): WMT14 En-De test set, Transformer-big verifier and NAT-big drafter
# (k = 30, GAD++ re-tuned: top-3 tau = 1.0 and top-5 tau = 6.0), speed vs the big verifier's beam 5. The teacher's
# and the verifier's beam 5 are 1.0x; Blockwise's speedups are against greedy decoding (the paper's dagger).
GAD_BIG_K = 30
GAD_BIG_REFERENCE = "wmt14_en-de_big"  # the gad.paper_reference of a big-model config
GAD_TABLE4 = {
    "teacher_b5": {"label": "Teacher Transformer-big (b=5)", "bleu": 29.31, "speed": 1.0},
    "verifier_b5": {"label": "AT verifier big (b=5)", "bleu": 29.25, "speed": 1.0},
    "verifier_b1": {"label": "AT verifier big (b=1)", "bleu": 29.18, "speed": 1.1},
    "nat_drafter": {"label": "NAT drafter big (k=30)", "bleu": 27.35, "speed": 15.0, "iterations": 1.4, "k": 30},
    "gad": {"label": "GAD big (k=30)", "bleu": 29.18, "speed": 3.0, "iterations": 4.8, "k": 30},
    "gad_pp_hq": {"label": "GAD++ big (k=30, top-3, tau=1.0)", "bleu": 29.32, "speed": 3.5, "iterations": 4.2,
                  "k": 30, "beta": 3, "tau": 1.0},
    "gad_pp_he": {"label": "GAD++ big (k=30, top-5, tau=6.0)", "bleu": 29.15, "speed": 5.0, "iterations": 2.6,
                  "k": 30, "beta": 5, "tau": 6.0},
}
# Table 4's Blockwise rows (Stern et al. 2018, big models): system, iterations ("/"), BLEU, speedup over greedy
GAD_TABLE4_BLOCKWISE = [
    ("Blockwise decoding (k=2) (Stern et al., 2018; speedup vs greedy)", "/", 28.95, 1.7),
    ("Blockwise decoding (k=10) (Stern et al., 2018; speedup vs greedy)", "/", 27.40, 3.0),
]



def gad_table4_rows(label_col: str = "label") -> list:
    """Table 4's teacher and Blockwise rows as paper-only rows."""
    teacher = GAD_TABLE4["teacher_b5"]
    return [{label_col: teacher["label"], "paper_iterations": "N", "paper_bleu": teacher["bleu"],
             "paper_speed": teacher["speed"]}] + [
        {label_col: f"Blockwise: {system}", "paper_iterations": it, "paper_bleu": bleu, "paper_speed": speed}
        for system, it, bleu, speed in GAD_TABLE4_BLOCKWISE]


# Xia et al. 2022, Table 5 (= Ge et al. Table 9): WMT14 En-De test set, the base verifier with the NAT-base drafter
# (GAD-base) or a NAT-big drafter (w/ NAT-big), all at k = 30: Tok. (mean accepted tokens), Iter., BLEU.
GAD_TABLE5_K = 30
GAD_TABLE5 = {
    ("greedy", "base"): {"tok": 1.0, "iterations": "N", "bleu": 28.73},
    ("gad", "base"): {"tok": 5.53, "iterations": 5.0, "bleu": 28.73},
    ("gad", "big"): {"tok": 5.90, "iterations": 4.7, "bleu": 28.73},
    ("gad_pp_hq", "base"): {"tok": 6.69, "iterations": 4.1, "bleu": 28.81, "beta": 3, "tau": 1.0},
    ("gad_pp_hq", "big"): {"tok": 7.32, "iterations": 3.8, "bleu": 29.12, "beta": 3, "tau": 1.0},
    ("gad_pp_he", "base"): {"tok": 8.71, "iterations": 3.2, "bleu": 28.58, "beta": 5, "tau": 3.0},
    ("gad_pp_he", "big"): {"tok": 9.73, "iterations": 2.8, "bleu": 28.98, "beta": 5, "tau": 3.0},
}

# Xia et al. 2022, Table 6: a single Transformer-big teacher vs an ensemble of 3 for Seq-KD, base (k = 25) and big
# (k = 30) GAD, WMT14 En-De test set: (teachers, size) -> row -> iterations, BLEU, speed (vs that size's verifier
# beam 5; the teacher has none: "/"). The single-teacher halves are Tables 1 and 4.
GAD_TABLE6_ROWS = ("teacher_b5", "nat_drafter", "verifier_b5", "verifier_b1", "gad", "gad_pp_hq", "gad_pp_he")
# size -> one tuple per row of GAD_TABLE6_ROWS, as printed: single teacher (Iter., BLEU, Speed), then the ensemble's
_TABLE6_PRINTED = {
    "base": [("N", 29.31, None, "N", 30.64, None), (1.6, 26.48, 14.3, 1.6, 27.16, 14.0),
             ("N", 28.89, 1.0, "N", 29.19, 1.0), ("N", 28.73, 1.1, "N", 29.24, 1.1), (4.9, 28.73, 3.0, 4.5, 29.24, 3.3),
             (4.0, 28.89, 3.6, 4.0, 29.31, 3.4), (3.1, 28.73, 4.5, 3.1, 29.52, 4.3)],
    "big": [("N", 29.31, None, "N", 30.64, None), (1.4, 27.35, 15.0, 1.4, 28.10, 14.8),
            ("N", 29.25, 1.0, "N", 29.74, 1.0), ("N", 29.18, 1.1, "N", 29.69, 1.1), (4.8, 29.18, 3.0, 4.2, 29.69, 3.3),
            (4.2, 29.32, 3.5, 3.8, 29.88, 3.6), (2.6, 29.15, 5.0, 2.5, 29.81, 5.1)],
}
GAD_TABLE6 = {(half, size): {key: dict(zip(("iterations", "bleu", "speed"), cells[3 * i: 3 * i + 3]))
                             for key, cells in zip(GAD_TABLE6_ROWS, printed)}
              for size, printed in _TABLE6_PRINTED.items() for i, half in enumerate(("single", "ensemble"))}
# the GAD settings of each size in Table 6: block size and the two GAD++ (beta, tau)
GAD_TABLE6_SETTINGS = {"base": {"k": 25, "gad_pp_hq": (3, 1.0), "gad_pp_he": (5, 3.0)},
                       "big": {"k": GAD_BIG_K, "gad_pp_hq": (3, 1.0), "gad_pp_he": (5, 6.0)}}

# Ge et al. 2022, Table 5: WMT14 En<->De and WMT16 En<->Ro BLEU (directions in this order); iterations and speed are
# the paper's WMT14 En->De figures (speed vs beam 5; "/" = not given; Imputer and SUNDAE: vs greedy). Its AR
# baseline (Transformer-base w/o Seq-KD) is from Kasai et al. (2020): 27.38 for En-De, where Xia's Table 1 has 27.76.
GE_TABLE5_DIRECTIONS = ("wmt14_en-de", "wmt14_de-en", "wmt16_en-ro", "wmt16_ro-en")
GE_TABLE5_OURS = {
    "teacher_b5": (29.31, 32.11, 34.72, 34.49),
    "baseline_b5": (27.38, 31.78, 34.16, 34.46),
    "verifier_b5": (28.89, 32.53, 34.96, 34.86),
    "verifier_b1": (28.73, 32.18, 34.83, 34.65),
}
# group, system, iterations, speed, BLEU per direction (None: "/")
GE_TABLE5_CITED = [
    ("Fully NAR", "NAT w/ Fertility (Gu et al., 2018)", "1", 15.6, (17.69, 21.47, 27.29, 29.06)),
    ("Fully NAR", "CTC (Libovický & Helcl, 2018)", "1", None, (17.68, 19.80, 19.93, 24.71)),
    ("Fully NAR", "Bag-of-ngrams (Shao et al., 2020)", "1", 10.8, (20.90, 24.61, 28.31, 29.29)),
    ("Fully NAR", "AXE (Ghazvininejad et al., 2020a)", "1", None, (23.53, 27.90, 30.75, 31.54)),
    ("Fully NAR", "GLAT (Qian et al., 2021)", "1", 15.3, (25.21, 29.84, 31.19, 32.04)),
    ("Fully NAR", "OaXE (Du et al., 2021)", "1", None, (26.10, 30.20, 32.40, 33.30)),
    ("Fully NAR", "AlignNART (Song et al., 2021)", "1", 13.4, (26.40, 30.40, 32.50, 33.10)),
    ("Fully NAR", "DSLIP (Huang et al., 2021)", "1", 14.8, (27.02, 31.61, 34.17, 34.60)),
    ("Fully NAR", "F-VAE (Gu & Kong, 2021)", "1", 16.5, (27.49, 31.10, 33.79, 33.87)),
    ("Iterative NAR", "iNAT (Lee et al., 2018)", "10", None, (21.61, 25.48, 29.32, 30.19)),
    ("Iterative NAR", "CMLM (Ghazvininejad et al., 2019)", "10", 1.7, (27.03, 30.53, 33.08, 33.31)),
    ("Iterative NAR", "LevT (Gu et al., 2019)", "2.1", 4.0, (27.27, None, None, 33.26)),
    ("Iterative NAR", "SMART (Ghazvininejad et al., 2020b)", "10", 1.7, (27.65, 31.27, None, None)),
    ("Iterative NAR", "DisCo (Kasai et al., 2020)", "4.8", 3.5, (27.34, 31.31, 33.22, 33.25)),
    ("Iterative NAR", "Imputer (Saharia et al., 2020; speedup vs greedy)", "8", 3.9, (28.20, 31.80, 34.40, 34.10)),
    ("Iterative NAR", "Multi-Task NAT (Hao et al., 2021)", "10", 1.7, (27.98, 31.27, 33.80, 33.60)),
    ("Iterative NAR", "RewriteNAT (Geng et al., 2021)", "2.7", 3.1, (27.83, 31.52, 33.63, 34.09)),
    ("Iterative NAR", "SUNDAE (Savinov et al., 2021; speedup vs greedy)", "16", 1.4, (28.46, 32.30, None, None)),
    ("Iterative NAR", "CMLMC (Huang et al., 2022)", "10", None, (28.37, 31.41, 34.57, 34.13)),
]
# the systems Ge's Table 5 cites beyond Xia's Table 1
GE_TABLE5_ONLY = ("OaXE", "DSLIP", "F-VAE", "Multi-Task NAT", "CMLMC")


def ge_table5_bleu(key: str, reference: str) -> float:
    """Ge et al. Table 5's BLEU of one of our systems (``GE_TABLE5_OURS`` key) in the ``reference`` direction."""
    return GE_TABLE5_OURS[key][GE_TABLE5_DIRECTIONS.index(reference)]


def ge_table5_rows(reference: str, label_col: str = "label") -> list:
    """Ge et al. Table 5's cited systems as paper-only rows of ``reference``: for WMT14 En-De the ones Xia's Table 1
    lacks (with iterations and speed), for another direction all of them, BLEU only (the paper's iterations and
    speed are WMT14 En->De's)."""
    i = GE_TABLE5_DIRECTIONS.index(reference)
    en_de = reference == "wmt14_en-de"
    return [{label_col: f"{group}: {system} (Ge et al. Table 5)", "paper_iterations": it if en_de else None,
             "paper_bleu": bleu[i], "paper_speed": speed if en_de else None}
            for group, system, it, speed, bleu in GE_TABLE5_CITED
            if bleu[i] is not None and (not en_de or system.split(" (")[0] in GE_TABLE5_ONLY)]
