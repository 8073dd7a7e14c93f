"""Xia et al. 2022 (GAD): the hardware-independent claims, checked on the GAD track's tables."""
from __future__ import annotations

import re
from typing import List, Tuple

import pandas as pd

from .claim import Audit, Claim, Figure, NotCheckable, lossless_claim, need, numeric, rises

T1, T2, T3, T8 = "gad_table1", "gad_table2_block_size", "gad_table3_beta_tau", "gad_table8_memory"
EXACT_GAD = r"gad-k\d+"            # vanilla GAD rows (top-1 verification): lossless
GADPP = r"gad-k(\d+)-top(\d+)-tau([\d.]+)"


def _by_k(df: pd.DataFrame) -> pd.DataFrame:
    rows = need(df, "k")[df["k"].astype(str).str.fullmatch(r"\d+")].copy()
    rows["k"] = rows["k"].astype(int)
    return rows.sort_values("k")


def gadpp_accepts_more(df: pd.DataFrame) -> Tuple[str, bool]:
    rows = _by_k(need(df, "tokens_per_iteration", "gad_tokens_per_iteration"))
    pairs = [(int(r.k), float(r.tokens_per_iteration), float(r.gad_tokens_per_iteration)) for r in rows.itertuples()
             if pd.notna(r.tokens_per_iteration) and pd.notna(r.gad_tokens_per_iteration)]
    if not pairs:
        raise NotCheckable("no block size with both GAD++ and GAD tokens per iteration")
    return "; ".join(f"k={k}: {pp:.2f} vs {g:.2f}" for k, pp, g in pairs), all(pp > g for _, pp, g in pairs)


def _peaks_in_the_middle(df: pd.DataFrame, column: str, unit: str) -> Tuple[str, bool]:
    rows = _by_k(df)
    rows = rows[numeric(rows, column).notna()]
    ks, values = list(rows["k"]), list(rows[column].astype(float))
    if len(ks) < 3:
        raise NotCheckable(f"{len(ks)} block size(s) {ks}: a peak in the middle needs three or more")
    best = ks[values.index(max(values))]
    return (", ".join(f"k={k}: {v:.2f}{unit}" for k, v in zip(ks, values)) + f"; peak at k={best}",
            best not in (ks[0], ks[-1]))


def speedup_peaks_in_the_middle(df: pd.DataFrame) -> Tuple[str, bool]:
    return _peaks_in_the_middle(df, "speedup_vs_beam", "x")


def tokens_peak_in_the_middle(df: pd.DataFrame) -> Tuple[str, bool]:
    return _peaks_in_the_middle(df, "tokens_per_iteration", "")


def _grid(df: pd.DataFrame, what: str) -> List[Tuple[int, float, float]]:
    """Table 3's GAD++ cells as ``(beta, tau, value)`` for ``what`` = ``tok`` or ``bleu`` (the greedy row left out)."""
    out = []
    taus = pd.to_numeric(need(df, "tau")["tau"], errors="coerce")
    for col in df.columns:
        m = re.fullmatch(rf"top(\d+)_{what}", col)
        if m:
            out += [(int(m.group(1)), float(t), float(v)) for t, v in zip(taus, pd.to_numeric(df[col], errors="coerce"))
                    if pd.notna(t) and pd.notna(v)]
    if not out:
        raise NotCheckable(f"the table has no top<beta>_{what} cells")
    return sorted(out)


def tokens_rise_with_beta_and_tau(df: pd.DataFrame) -> Tuple[str, bool]:
    cells = _grid(df, "tok")
    betas = sorted({b for b, _, _ in cells})
    by_tau = {b: [v for bb, _, v in cells if bb == b] for b in betas}
    tau_ok = all(rises(v) for v in by_tau.values())
    value = {(b, t): v for b, t, v in cells}
    beta_ok = all(value[(b2, t)] >= value[(b1, t)] for b1, b2 in zip(betas, betas[1:]) for t in
                  {t for b, t in value if b == b1} & {t for b, t in value if b == b2})
    ours = "; ".join(f"top-{b}: " + " -> ".join(f"{v:.2f}" for v in by_tau[b]) for b in betas)
    return ours + " (over tau " + ", ".join(f"{t:g}" for t in sorted({t for _, t, _ in cells})) + ")", tau_ok and beta_ok


def _greedy_bleu(df: pd.DataFrame) -> float:
    greedy = df[need(df, "tau")["tau"].astype(str) == "greedy"]
    bleu = [float(v) for c in greedy.columns if re.fullmatch(r"top\d+_bleu", c) for v in greedy[c] if pd.notna(v)]
    if not bleu:
        raise NotCheckable("the table has no greedy row with a BLEU")
    return bleu[0]


def high_quality_bleu_at_least_greedy(df: pd.DataFrame) -> Tuple[str, bool]:
    greedy = _greedy_bleu(df)
    hq = [v for b, t, v in _grid(df, "bleu") if b == 3 and t == 1.0]
    if not hq:
        raise NotCheckable("the table has no top-3, tau=1 cell")
    return f"top-3, tau=1: {hq[0]:.2f} vs greedy {greedy:.2f}", hq[0] >= greedy


def over_loose_lowers_bleu(df: pd.DataFrame) -> Tuple[str, bool]:
    cells = _grid(df, "bleu")
    if len(cells) < 2:
        raise NotCheckable("one GAD++ setting: nothing to compare the loosest with")
    beta, tau, loosest = max(cells, key=lambda c: (c[0], c[1]))
    peak = max(v for _, _, v in cells)
    return f"top-{beta}, tau={tau:g}: {loosest:.2f} vs the peak {peak:.2f}", loosest < peak


def iterations_order(df: pd.DataFrame) -> Tuple[str, bool]:
    """NAT < GAD++ high-efficiency < GAD++ high-quality < GAD in mean iterations, at the block size of the GAD row."""
    its = numeric(df, "mean_iterations")
    labels = need(df, "label")["label"].astype(str)
    gad = [(lab, it) for lab, it in zip(labels, its) if re.fullmatch(EXACT_GAD, lab) and pd.notna(it)]
    if not gad:
        raise NotCheckable("no vanilla GAD row")
    k = gad[0][0].split("-k")[1]
    nat = [it for lab, it in zip(labels, its) if lab == f"nat-k{k}" and pd.notna(it)]
    pp = sorted((int(m.group(2)), float(m.group(3)), it) for lab, it in zip(labels, its)
                if (m := re.fullmatch(GADPP, lab)) and m.group(1) == k and pd.notna(it))
    if not nat or len(pp) < 2:
        raise NotCheckable(f"k={k}: needs the NAT row and two GAD++ settings")
    (b_hq, t_hq, hq), (b_he, t_he, he) = pp[0], pp[-1]
    ours = (f"k={k}: NAT {nat[0]:.2f}, GAD++ (top-{b_he}, tau={t_he:g}) {he:.2f}, GAD++ (top-{b_hq}, "
            f"tau={t_hq:g}) {hq:.2f}, GAD {gad[0][1]:.2f}")
    return ours, nat[0] < he < hq < gad[0][1]


def extra_memory_is_the_drafter(df: pd.DataFrame) -> Tuple[str, bool]:
    """GAD's peak memory above greedy's is mostly the drafter's weights (the paper: 250 of 400 MB)."""
    rows = {str(r["label"]): r for _, r in need(df, "label", "peak_mb", "weights_mb").iterrows()}
    gad = next((lab for lab in rows if re.fullmatch(EXACT_GAD, lab)), None)
    if gad is None or "greedy" not in rows:
        raise NotCheckable("needs a greedy and a vanilla GAD row")
    extra = float(rows[gad]["peak_mb"]) - float(rows["greedy"]["peak_mb"])
    drafter = float(rows[gad]["weights_mb"]) - float(rows["greedy"]["weights_mb"])
    return (f"{gad}: {extra:.1f} MB above greedy, drafter weights {drafter:.1f} MB",
            extra > 0 and drafter >= extra / 2)


AUDIT = [Audit(T1, "label", EXACT_GAD)]
CLAIMS = [
    lossless_claim("Xia", "vanilla GAD", "Xia §3 and Table 1: GAD 28.73 BLEU = the AT verifier's greedy 28.73 (top-1 "
                   "verification)", AUDIT[0]),
    Claim("Xia", "mean iterations: NAT < GAD++ high-efficiency < GAD++ high-quality < GAD",
          "Xia Table 1 (k=25): NAT 1.6 < GAD++ (top-5, tau=3) 3.1 < GAD++ (top-3, tau=1) 4.0 < GAD 4.9", (T1,),
          iterations_order),
    Claim("Xia", "GAD++ accepts more tokens per iteration than GAD, at every block size k",
          "Xia footnote 8 (dev): GAD++ 10.99 vs GAD 6.13 tokens per iteration; Ge Table 5: GAD++ needs fewer "
          "iterations than GAD", (T2,), gadpp_accepts_more),
    Claim("Xia", "GAD++'s speedup peaks at a middle block size (not the smallest or largest k tried)",
          "Xia Table 2 (dev, top-3, tau=1): speed peaks at k=25 (3.79x) among k = 10..30", (T2,),
          speedup_peaks_in_the_middle),
    Claim("Xia", "GAD++'s tokens per iteration peak at a middle block size",
          "Xia Table 2 (dev, top-3, tau=1): Tok. peaks at k=25 (7.56) among k = 10..30", (T2,),
          tokens_peak_in_the_middle),
    Claim("Xia", "tokens per iteration rise with tau, and with beta at the same tau",
          "Xia Table 3 (dev, k=25): 7.56 -> 10.38 (top-3) and 7.58 -> 10.99 (top-5) for tau 1 -> 5; top-5 >= top-3 "
          "at every tau", (T3,), tokens_rise_with_beta_and_tau),
    Claim("Xia", "high-quality GAD++ (top-3, tau=1) BLEU >= greedy decoding's",
          "Xia Table 3 (dev): 27.02 vs greedy 26.62", (T3,), high_quality_bleu_at_least_greedy),
    Claim("Xia", "over-loose settings lower BLEU: the loosest (largest beta, tau) is below the grid's peak",
          "Xia Table 3 / §5.3.1: 26.64 at top-5, tau=5 vs the peak 27.02", (T3,), over_loose_lowers_bleu),
    Claim("Xia", "GAD's extra memory over AT greedy is mostly the drafter's weights (at least half of it)",
          "Xia Table 8 / App. A: GAD 1621 vs greedy 1211 MiB, about 400 MB extra of which about 250 MB is the "
          "drafter's weights", (T8,), extra_memory_is_the_drafter),
]

HEADLINE = [
    Figure("GAD BLEU", T1, ("label", EXACT_GAD), "bleu", ("paper_bleu", "paper_k25_bleu"), "Xia Table 1 (test)"),
    Figure("GAD tokens / iteration", T1, ("label", EXACT_GAD), "tokens_per_iteration", 6.13, "Xia footnote 8 (dev)"),
    Figure("GAD speedup vs greedy", T1, ("label", EXACT_GAD), "speedup_vs_greedy", 2.7,
           "Xia Table 1: 3.0x / 1.1x over beam"),
    Figure("GAD++ (top-3, tau=1) BLEU", T1, ("label", r"gad-k\d+-top3-tau1"), "bleu", ("paper_bleu", "paper_k25_bleu"),
           "Xia Table 1"),
    Figure("GAD++ (top-3, tau=1) speedup vs greedy", T1, ("label", r"gad-k\d+-top3-tau1"), "speedup_vs_greedy", 3.3,
           "Xia Table 1: 3.6x / 1.1x over beam"),
]
