"""Prior work the papers cite in their main tables, as paper-only rows (no model of ours stands behind them).

Each table function appends these below our rows with ``source = "paper only (cited)"`` and empty columns of ours,
so a reader sees the paper's whole table while nothing of ours is claimed for them. All are WMT14 En-De
(newstest2014) or CoNLL-14 numbers as printed in the papers.
"""
from __future__ import annotations

from typing import List

import pandas as pd

PAPER_ONLY = "paper only (cited)"
OURS = "ours"

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

# Ge et al. 2022, Table 3 (CoNLL-14): model, synthetic data, multi-stage fine-tuning, F0.5, online speedup over the
# Transformer-big beam 5 (None: "-", not testable in the paper's runtime). PIE and Span Correction: numbers from
# Chen et al. (2020); PIE's speedup measured with TensorFlow (not strictly comparable, the paper says).
GE_TABLE3 = [
    ("Transformer-big (beam=5)", "yes", "no", 61.6, 1.0),
    ("PIE (Awasthi et al., 2019; TensorFlow speedup)", "yes", "no", 59.7, 10.3),
    ("Span Correction (Chen et al., 2020)", "yes", "no", 61.0, 2.6),
    ("Seq2Edits (Stahlberg & Kumar, 2020)", "yes", "yes", 58.6, None),
    ("GECToR RoBERTa (Omelianchuk et al., 2020)", "yes", "yes", 64.0, 12.4),
    ("GECToR XLNet (Omelianchuk et al., 2020)", "yes", "yes", 65.3, None),
    ("12+2 BART-Init (beam=1)", "yes", "yes", 66.4, 2.3),
    ("12+2 BART-Init (IAD)", "yes", "yes", 66.4, 9.6),
]


def append_paper_only(df: pd.DataFrame, rows: List[dict]) -> pd.DataFrame:
    """``df`` (ours, marked ``source = ours``) followed by the paper-only ``rows`` (columns of ours left empty)."""
    ours = df.assign(source=OURS)
    cited = pd.DataFrame([{**r, "source": PAPER_ONLY} for r in rows])
    return pd.concat([ours, cited], ignore_index=True)


def gad_table1_rows(label_col: str = "label") -> List[dict]:
    return [{label_col: f"{group}: {system}", "paper_iterations": it, "paper_bleu": bleu, "paper_speed": speed}
            for group, system, it, bleu, speed in GAD_TABLE1_NAT]


def stern_table4_rows() -> List[dict]:
    return [{"system": f"{system} [{source}]", "paper_bleu": bleu, "paper_speedup": speed}
            for system, source, bleu, speed in STERN_TABLE4_PRIOR]


def ge_table3_rows() -> List[dict]:
    return [{"system": f"{model} [CoNLL-14, Ge Table 3; synthetic data: {syn}, multi-stage fine-tuning: {ms}]",
             "paper_F0.5": f05, "paper_speedup": speed} for model, syn, ms, f05, speed in GE_TABLE3]
