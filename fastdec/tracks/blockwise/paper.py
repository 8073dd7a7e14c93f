"""Reference numbers of Stern, Shazeer, Uszkoreit (2018), *Blockwise Parallel Decoding for Deep Autoregressive
Models* (NeurIPS), WMT14 En-De, Transformer-base in Tensor2Tensor, 8 P100 GPUs (../shared/papers/blockwise-parallel-decoding.txt).

Variants (Table 1 columns): ``regular`` = original data, frozen base; ``distill`` = distilled data, frozen base;
``finetune`` = original data, base fine-tuned; ``both`` = distilled data + fine-tuning.
Every cell is ``(BLEU, mean accepted block size)``.
"""
from __future__ import annotations

VARIANTS = ("regular", "distill", "finetune", "both")
VARIANT_LABELS = {"regular": "Regular", "distill": "Distillation", "finetune": "Fine Tuning", "both": "Both"}

# Table 1: newstest2013 (dev), BLEU / mean accepted block size. k = 1 only exists for the frozen columns.
TABLE1 = {
    1: {"regular": (26.00, 1.00), "distill": (26.41, 1.00)},
    2: {"regular": (25.81, 1.51), "distill": (26.52, 1.55), "finetune": (25.74, 1.78), "both": (26.58, 1.88)},
    4: {"regular": (25.84, 1.73), "distill": (26.31, 1.85), "finetune": (25.05, 2.69), "both": (26.36, 3.27)},
    6: {"regular": (26.08, 1.76), "distill": (26.26, 1.90), "finetune": (24.69, 2.98), "both": (26.18, 4.18)},
    8: {"regular": (25.82, 1.76), "distill": (26.25, 1.91), "finetune": (24.27, 3.01), "both": (26.11, 4.69)},
    10: {"regular": (25.69, 1.74), "distill": (26.34, 1.90), "finetune": (23.51, 2.87), "both": (25.60, 4.95)},
}
GREEDY_DEV_BLEU = 25.56  # the base Transformer, greedy, newstest2013 (Sec. 7.1)

# Sec. 7.1, text after Table 1: top-k approximate selection on the "Both" models (dev).
APPROX = {
    2: {2: (26.49, 1.92), 4: (26.22, 3.47), 6: (25.90, 4.59), 8: (25.71, 5.34), 10: (25.04, 5.67)},
    3: {2: (26.41, 1.93), 4: (26.14, 3.52), 6: (25.56, 4.69), 8: (25.41, 5.52), 10: (24.68, 5.91)},
}
# Sec. 7.1: minimum block size ℓ = 2 or 3 (Sec. 5.3) -- no numbers are given, only the finding.
MIN_BLOCK_NOTE = ("paper (Sec. 7.1): minimum block sizes 2 or 3 give much larger BLEU drops with only minor "
                  "gains in mean accepted block size (no numbers reported)")

# Table 4: newstest2014 (test), "Both" models, BLEU and wall-clock speedup over greedy (k = 1) for
# single-sentence decoding.
TABLE4 = {1: (29.11, 1.00), 2: (28.95, 1.72), 4: (28.54, 2.69), 6: (28.11, 3.10), 8: (27.88, 3.31),
          10: (27.40, 3.04)}

# Figure 4 (translation): wall-clock speedup vs mean accepted block size of the "Both" column of Table 1.
# The figure's exact coordinates are not in the text; the text gives the peak (3.3x at k = 8, block size 4.7).
# We pair Table 1's "Both" block sizes (dev) with Table 4's speedups (test) as the closest published numbers.
FIGURE4 = {k: (TABLE1[k]["both"][1], TABLE4[k][1]) for k in (2, 4, 6, 8, 10)}
FIGURE4_NOTE = ("paper points: Table 1 'Both' mean block sizes (dev) paired with Table 4 speedups (test); "
                "the text states the peak: 3.3x at k = 8, mean accepted block size 4.7")

PAPER_HARDWARE = "Tensor2Tensor Transformer-base, WMT14 En-De, P100 GPU, batch size 1"


# Stern et al. 2018, Table 4 (newstest2014 En-De): system, source, BLEU, wall-clock speedup (None: not given)
STERN_TABLE4_PRIOR = [
    ("Transformer (beam size 4)", "Vaswani et al. (2017)", 28.4, None),
    ("Transformer (beam size 1)", "Gu et al. (2018)", 22.71, None),
    ("Transformer (beam size 4)", "Gu et al. (2018)", 23.45, None),
    ("Non-autoregressive Transformer", "Gu et al. (2018)", 17.35, None),
    ("Non-autoregressive Transformer (+FT)", "Gu et al. (2018)", 17.69, None),
    ("Non-autoregressive Transformer (+FT + NPD s = 10)", "Gu et al. (2018)", 18.66, None),
    ("Non-autoregressive Transformer (+FT + NPD s = 100)", "Gu et al. (2018)", 19.17, None),
    ("Transformer (beam size 1)", "Lee et al. (2018)", 23.77, 1.20),
    ("Transformer (beam size 4)", "Lee et al. (2018)", 24.57, 1.00),
    ("Iterative refinement Transformer (i_dec = 1)", "Lee et al. (2018)", 13.91, 11.39),
    ("Iterative refinement Transformer (i_dec = 2)", "Lee et al. (2018)", 16.95, 8.77),
    ("Iterative refinement Transformer (i_dec = 5)", "Lee et al. (2018)", 20.26, 3.11),
    ("Iterative refinement Transformer (i_dec = 10)", "Lee et al. (2018)", 21.61, 2.01),
    ("Iterative refinement Transformer (Adaptive)", "Lee et al. (2018)", 21.54, 2.39),
    ("Latent Transformer without rescoring", "Kaiser et al. (2018)", 19.8, None),
    ("Latent Transformer rescoring top-10", "Kaiser et al. (2018)", 21.0, None),
    ("Latent Transformer rescoring top-100", "Kaiser et al. (2018)", 22.5, None),
]


def stern_table4_rows() -> list:
    return [{"system": f"{system} [{source}]", "paper_bleu": bleu, "paper_speedup": speed}
            for system, source, bleu, speed in STERN_TABLE4_PRIOR]
