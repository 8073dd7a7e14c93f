"""Tiny tables with the columns the tracks write, for the claims' checks (fastdec.claims.checks_*)."""
import pandas as pd


def gad_table1(nat=1.6, he=3.1, hq=4.0, gad=4.9, identical=100.0, k=25):
    """Xia Table 1's rows of ours: mean iterations per method, the vanilla GAD row's identity with greedy."""
    rows = [("greedy", None, 100.0), (f"nat-k{k}", nat, 97.5), (f"gad-k{k}", gad, identical),
            (f"gad-k{k}-top3-tau1", hq, 99.0), (f"gad-k{k}-top5-tau3", he, 95.0)]
    return pd.DataFrame([{"label": lab, "mean_iterations": it, "tokens_per_iteration": 2.0, "bleu": 27.0,
                          "speedup_vs_greedy": 2.0, "identical_to_greedy_pct": idt} for lab, it, idt in rows])


def gad_table2(pp, gad, speed, ks=(10, 15, 20, 25, 30)):
    """Xia Table 2: GAD++ (``pp``) and GAD tokens per iteration and GAD++ speedup per block size."""
    rows = [{"label": "fairseq-beam5", "k": "-", "tokens_per_iteration": 1.0, "gad_tokens_per_iteration": None,
             "speedup_vs_beam": 1.0}]
    for k, a, b, s in zip(ks, pp, gad, speed):
        rows.append({"label": f"gad-k{k}-top3-tau1", "k": str(k), "tokens_per_iteration": a,
                     "gad_tokens_per_iteration": b, "speedup_vs_beam": s})
    return pd.DataFrame(rows)


def gad_table3(top3, top5, greedy_bleu=26.62, taus=(1, 2, 3, 4, 5)):
    """Xia Table 3: per tau, ``(tokens, BLEU)`` for top-3 and top-5; the first row greedy decoding."""
    rows = [{"tau": "greedy", "top3_tok": 1.0, "top3_bleu": greedy_bleu, "top5_tok": 1.0, "top5_bleu": greedy_bleu}]
    for t, (t3, b3), (t5, b5) in zip(taus, top3, top5):
        rows.append({"tau": str(t), "top3_tok": t3, "top3_bleu": b3, "top5_tok": t5, "top5_bleu": b5})
    return pd.DataFrame(rows)


# Xia Table 3's cells
XIA_TOP3 = [(7.56, 27.02), (8.64, 26.92), (9.46, 26.84), (10.04, 26.78), (10.38, 26.70)]
XIA_TOP5 = [(7.58, 27.02), (8.77, 26.92), (9.72, 26.84), (10.50, 26.74), (10.99, 26.64)]


def gad_table8(greedy=(1211.0, 200.0), gad=(1621.0, 450.0)):
    """Xia Table 8: ``(peak_mb, weights_mb)`` of greedy decoding and vanilla GAD."""
    return pd.DataFrame([{"label": lab, "device": "cuda", "peak_mb": p, "weights_mb": w}
                         for lab, (p, w) in (("greedy", greedy), ("gad-k25", gad))])


def blockwise_table1(columns):
    """Stern Table 1: ``columns`` maps Regular / Distillation / Fine Tuning / Both to ``[(BLEU, block)]`` for
    k = 2, 4, 6."""
    rows = [{"k": 1, "Regular": "26.00 / 1.00"}]
    for i, k in enumerate((2, 4, 6)):
        rows.append({"k": k, **{c: f"{v[i][0]:.2f} / {v[i][1]:.2f}" for c, v in columns.items()}})
    return pd.DataFrame(rows)


STERN_TABLE1 = {"Regular": [(25.81, 1.51), (25.84, 1.73), (26.08, 1.76)],
                "Distillation": [(26.52, 1.55), (26.31, 1.85), (26.26, 1.90)],
                "Fine Tuning": [(25.74, 1.78), (25.05, 2.69), (24.69, 2.98)],
                "Both": [(26.58, 1.88), (26.36, 3.27), (26.18, 4.18)]}


def blockwise_pairs(exact, other, column):
    """A table of ``k``, ``exact`` and one more column of ``"BLEU / block (x%)"`` cells (approx / min-block)."""
    return pd.DataFrame([{"k": k, "exact": f"{e[0]:.2f} / {e[1]:.2f} (100%)", column: f"{o[0]:.2f} / {o[1]:.2f} (0%)"}
                         for k, e, o in zip((2, 4), exact, other)])


def blockwise_figure4(blocks, speeds):
    return pd.DataFrame([{"k": f"k={k}", "mean_block": b, "tokens_per_iteration": b, "speedup_vs_greedy": s,
                          "paper_mean_block": 1.88, "paper_speedup": 1.72} for k, b, s in zip((2, 4), blocks, speeds)])


def students_table1(ssru_wps, base_wps=100.0):
    return pd.DataFrame([{"model": m, "self_attn": a, "ffn": f, "wps_cpu_b1_beam": w, "params": 1000}
                         for m, a, f, w in (("transformer_2_1", "attention", True, base_wps),
                                            ("ssru_2_1", "ssru", True, ssru_wps),
                                            ("aan_2_1", "aan", True, ssru_wps))])


def students_table2(pruned_heads):
    return pd.DataFrame([{"model": "ssru_noffn_2_1", "lambda": None, "heads": "4/2/-"},
                         {"model": "ssru_noffn_2_1_pruned_0p05", "lambda": 0.05, "heads": pruned_heads}])
