"""Stern et al. 2018's super-resolution numbers (CelebA 8x8 -> 32x32, Image Transformer, development set)."""

# Table 2: mean accepted block size per k. Regular: frozen base, exact; Approximate: frozen base, distance-based
# selection with epsilon = 2; Fine Tuning: fine-tuned base, exact; Both: fine-tuned base, epsilon = 2.
STERN_TABLE2 = {
    1: {"regular": 1.00, "approximate": 1.00, "fine_tuning": 1.00, "both": 1.00},
    2: {"regular": 1.07, "approximate": 1.24, "fine_tuning": 1.59, "both": 1.96},
    4: {"regular": 1.08, "approximate": 1.36, "fine_tuning": 2.11, "both": 3.75},
    6: {"regular": 1.09, "approximate": 1.38, "fine_tuning": 2.23, "both": 5.25},
    8: {"regular": 1.09, "approximate": 1.49, "fine_tuning": 2.17, "both": 6.36},
    10: {"regular": 1.10, "approximate": 1.40, "fine_tuning": 2.04, "both": 6.79},
}
STERN_TABLE2_EPSILON = 2  # "the distance-based selection criterion from Section 5.2 with epsilon = 2"

# Sec. 7.3 / Figure 4 (the figure's points are not printed): for super-resolution the wall-clock speedup over greedy
# decoding reaches 4.0x at k = 6, mean accepted block size 5.3 (the "Both" column of Table 2, P100 GPU).
STERN_FIGURE4_SUPERRES_PEAK = {"k": 6, "mean_block": 5.3, "speedup": 4.0}

# Table 2's columns: (variant trained, epsilon of the acceptance rule: 0 exact, else the approximate epsilon)
TABLE2_COLUMNS = {"regular": ("regular", 0), "approximate": ("regular", None), "fine_tuning": ("finetune", 0),
                  "both": ("finetune", None)}
