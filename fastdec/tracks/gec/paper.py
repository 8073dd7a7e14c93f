"""Reference numbers of the IAD paper (Ge et al. 2022, *Lossless Acceleration for Seq2seq Generation with
Aggressive Decoding*, ../shared/papers/aggressive-decoding-iad-gad.txt) for the GEC track's tables.

Setting of the paper: English GEC, BEA-2019 restricted training data (Lang-8, NUCLE, FCE, W&I+LOCNESS),
Transformer-big (6+6 layers, 1024/4096, shared 32k BPE vocabulary), fairseq, batch size 1, one V100 GPU;
Table 1, Table 2 and Figure 5 are measured on CoNLL-2013 (1,381 sentences), Table 12 on CPU
(Intel Xeon E5-2690 v4, OMP_NUM_THREADS 8 and 2).
"""

PAPER = "Ge et al. 2022 (IAD)"

# Table 1: total latency (s) over CoNLL-13, speedup over beam 5, MaxMatch P/R/F0.5. Keys are our system keys
# (see fastdec.tracks.gec.tables.system); the engine's own greedy has no row in the paper.
IAD_TABLE1 = {
    "fairseq-beam": {"label": "Transformer-big (beam=5)", "latency_s": 440, "speedup": 1.0,
                     "p": 53.84, "r": 18.00, "f05": 38.50},
    "fairseq-greedy": {"label": "Transformer-big (beam=1)", "latency_s": 397, "speedup": 1.1,
                       "p": 52.75, "r": 18.34, "f05": 38.36},
    "iad": {"label": "Transformer-big (IAD)", "latency_s": 54, "speedup": 8.1,
            "p": 52.75, "r": 18.34, "f05": 38.36, "identical_pct": 100.0},
}
# The same table's rows for the model pretrained on 300M synthetic pairs (not reproduced; kept for reference).
IAD_TABLE1_SYNTHETIC = {
    "fairseq-beam": {"label": "Transformer-big (beam=5), synthetic data", "latency_s": 437, "speedup": 1.0,
                     "p": 57.06, "r": 23.62, "f05": 44.47},
    "fairseq-greedy": {"label": "Transformer-big (beam=1), synthetic data", "latency_s": 390, "speedup": 1.1,
                       "p": 56.45, "r": 24.70, "f05": 44.91},
    "iad": {"label": "Transformer-big (IAD), synthetic data", "latency_s": 60, "speedup": 7.3,
            "p": 56.45, "r": 24.70, "f05": 44.91, "identical_pct": 100.0},
}
IAD_TABLE1_SENTENCES = 1381  # CoNLL-2013

# Table 2: examples of IAD's speedup over greedy decoding (CoNLL-13), with their edit ratio and the number of
# words of the input; the "blocks" are the paper's bracketed output spans (one per decoding iteration).
IAD_TABLE2 = [
    {"speedup": 16.7, "edit_ratio": 0.0, "input_words": 34, "blocks": 1},
    {"speedup": 5.8, "edit_ratio": 0.0, "input_words": 11, "blocks": 1},
    {"speedup": 6.8, "edit_ratio": 0.03, "input_words": 30, "blocks": 3},
    {"speedup": 5.1, "edit_ratio": 0.06, "input_words": 34, "blocks": 6},
    {"speedup": 3.5, "edit_ratio": 0.13, "input_words": 15, "blocks": 4},
    {"speedup": 1.5, "edit_ratio": 0.27, "input_words": 11, "blocks": 5},
    {"speedup": 1.4, "edit_ratio": 0.41, "input_words": 17, "blocks": 8},
]

# Table 12: IAD's speedup over beam 5 for the 6+6 Transformer on CPU, by thread count (OMP_NUM_THREADS).
IAD_TABLE12 = {
    8: {"model": "6+6", "beam5_speedup": 1.0, "iad_speedup": 6.5},
    2: {"model": "6+6", "beam5_speedup": 1.0, "iad_speedup": 6.1},
}

# Figure 5 is a scatter plot (no numbers in the text): speedup over greedy falls as the edit ratio grows;
# sentences without edits reach the highest speedups.
IAD_FIGURE5 = {"sentences": 1381, "trend": "speedup decreases with the edit ratio"}

# Table 4: IAD beyond English GEC, on a naive Transformer baseline (Transformer-big for NLPCC-18 Chinese GEC,
# Transformer-base for Wikilarge simplification); speedup over beam 5 at batch 1 (V100). NLPCC-18: F0.5 of the
# official M2 scorer on the 2,000 test sentences; Wikilarge: SARI and BLEU on the TurkCorpus test set (359 sentences,
# 8 references). Keys as in IAD_TABLE1.
IAD_TABLE4 = {
    "nlpcc18": {
        "fairseq-beam": {"label": "Transformer-big (beam=5)", "f05": 29.6, "speedup": 1.0},
        "fairseq-greedy": {"label": "Transformer-big (beam=1)", "f05": 29.4, "speedup": 1.1},
        "iad": {"label": "Transformer-big (IAD)", "f05": 29.4, "speedup": 8.5},
    },
    "wikilarge": {
        "fairseq-beam": {"label": "Transformer-base (beam=5)", "sari": 36.9, "bleu": 91.9, "speedup": 1.0},
        "fairseq-greedy": {"label": "Transformer-base (beam=1)", "sari": 36.1, "bleu": 90.7, "speedup": 1.1},
        "iad": {"label": "Transformer-base (IAD)", "sari": 36.1, "bleu": 90.7, "speedup": 8.8},
    },
}


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


def ge_table3_rows() -> list:
    return [{"system": f"{model} [CoNLL-14, Ge Table 3; synthetic data: {syn}, multi-stage fine-tuning: {ms}]",
             "paper_F0.5": f05, "paper_speedup": speed} for model, syn, ms, f05, speed in GE_TABLE3]
