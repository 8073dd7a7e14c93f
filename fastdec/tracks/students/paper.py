"""Reference numbers of Hsu, Garg, Liao, Chatsviorkin (2020), *Efficient Inference For Neural Machine Translation*
(../shared/papers/efficient-inference-nmt.txt): WMT14 En-De, Transformer-base students distilled from a teacher,
fairseq, beam 5; GPU: V100 batch 128; CPU: one core of a Xeon E5-2640 v4 at batch 1.
"""
from __future__ import annotations

# Table 1 (newstest2014, GPU batch 128): decoder self-attention replaced, with / without the decoder FFN.
# row -> (BLEU, wps, speedup vs the baseline in %)
TABLE1 = {
    ("attention", True): (28.9, 4510, 0),
    ("aan", True): (28.9, 5323, 18),
    ("ssru", True): (28.7, 5629, 25),
    ("aan", False): (28.0, 5915, 31),
    ("ssru", False): (28.5, 6079, 35),
}
TABLE1_NOTE = "paper: newstest2014, 6-6 Transformer-base students, GPU batch 128"

# Table 2 (12-1 layers, newstest2014): (decoder self-attention, pruned) -> (the paper's row, heads kept
# (enc / enc-dec / dec), BLEU). The SSRU rows are the SSRU w/o FFN student.
TABLE2 = {
    ("attention", False): ("Baseline", "96/8/8", 29.2),
    ("attention", True): ("+ pruned", "22/7/8", 29.0),
    ("ssru", False): ("SSRU w/o ffn", "96/8/-", 28.9),
    ("ssru", True): ("+ pruned", "18/8/-", 28.6),
}
TABLE2_NOTE = "paper: 12-1 layers, newstest2014; rows are (decoder self-attention, pruned)"

# Table 3 (newstest2015): BLEU, speedup GPU % / CPU %, parameters (millions); rows in the paper's order, each
# stacking one more change on the row above (tables.table3_paper_row says which of our students each row is).
TABLE3 = [
    ("Baseline", 31.1, None, None, 61),
    ("SSRU", 31.1, 14, 12, 57),
    ("+ Remove ffn", 31.0, 28, 49, 45),
    ("+ 12-1", 31.5, 82, 103, 56),
    ("+ Prune heads", 31.4, 84, 109, 46),
]
TABLE3_NOTE = "paper: newstest2015; speedup of GPU batch-128 / CPU batch-1 wps over the 6-6 baseline"

# Figure 2 is a plot; its points are not given as numbers in the text. The text states: removing one decoder layer
# from 6-6 gives about +10 % wps; 12 or more encoder layers with a 1-layer decoder up to +45 % with better BLEU.
FIGURE2_NOTE = ("paper Figure 2 (no numbers in the text): each decoder layer removed from 6-6 adds about 10 % wps; "
                "12-1 and deeper encoders reach up to +45 % wps with a better BLEU than 6-6")
