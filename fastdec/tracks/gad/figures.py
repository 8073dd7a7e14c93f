"""GAD paper Figure 1: translation quality (BLEU) against speedup over beam search for every system of Table 1,
the paper's points (its systems and, for WMT14 En-De, the NAT systems it cites) beside ours."""
from __future__ import annotations

from typing import Dict, List

import pandas as pd

from fastdec.report.tables import OURS
from fastdec.tracks.gad.paper import GAD_TABLE1_NAT

# the journal's Table 14 rows carry no labels
_KEY_LABELS = {"teacher_b5": "Teacher (b=5)", "baseline_b5": "AT w/o Seq-KD (b=5)", "verifier_b5": "AT verifier (b=5)",
               "verifier_b1": "AT verifier (b=1)", "nat_drafter": "NAT drafter", "gad": "GAD",
               "gad_pp_hq": "GAD++ (high quality)", "gad_pp_he": "GAD++ (high efficiency)"}


def paper_points(paper_rows: Dict[str, dict], cited: bool) -> pd.DataFrame:
    """The paper's (label, BLEU, speedup) points: its Table 1 (or Table 14) rows with both numbers, and the cited NAT
    systems with a published speedup (Imputer's is against greedy decoding, as the paper marks it)."""
    pts: List[dict] = [{"label": v.get("label", _KEY_LABELS.get(k, k)), "bleu": v["bleu"], "speedup": v["speed"]}
                       for k, v in paper_rows.items() if v.get("bleu") is not None and v.get("speed") is not None]
    if cited:
        pts += [{"label": system.split(" (")[0], "bleu": bleu, "speedup": speed}
                for _, system, _, bleu, speed in GAD_TABLE1_NAT if speed is not None]
    return pd.DataFrame(pts, columns=["label", "bleu", "speedup"])


def our_points(table1: pd.DataFrame) -> pd.DataFrame:
    ours = table1[table1["source"] == OURS][["label", "bleu", "speedup_vs_beam"]].dropna()
    return ours.rename(columns={"speedup_vs_beam": "speedup"}).reset_index(drop=True)


def figure1(table1: pd.DataFrame, paper: pd.DataFrame, out_png: str, *, title: str, paper_title: str) -> Dict:
    """Two panels side by side (at demo scale the BLEU ranges differ by an order of magnitude): the paper's points and
    ours (BLEU, speedup over our fairseq beam search). GAD/GAD++ points are red. Returns the plotted points."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ours = our_points(table1)
    if ours.empty:
        raise ValueError("GAD Table 1 has no rows of ours with both BLEU and a speedup to plot")
    panels = [(paper, paper_title, "#6acc65")] if not paper.empty else []
    panels.append((ours, title, "#4878cf"))
    fig, axes = plt.subplots(1, len(panels), figsize=(6.2 * len(panels), 6.4), dpi=120, squeeze=False)
    for ax, (pts, ttl, color) in zip(axes[0], panels):
        # points are numbered and named in a legend below the axes: the labels of close points would overlap
        for i, r in enumerate(pts.itertuples(), 1):
            c = "#d65f5f" if "gad" in r.label.lower() else color
            ax.scatter([r.speedup], [r.bleu], color=c, s=30, zorder=3, label=f"{i}  {r.label}")
            ax.annotate(str(i), (r.speedup, r.bleu), fontsize=7, xytext=(3, 3), textcoords="offset points")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, fontsize=7, frameon=False,
                  handletextpad=0.3, columnspacing=1.0)
        ax.axvline(1.0, color="grey", linestyle=":", linewidth=1)
        ax.set_xlabel("speedup over beam search (x)")
        ax.set_ylabel("BLEU")
        ax.set_title(ttl, fontsize=10)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out_png)
    plt.close(fig)
    return {"ours": ours.to_dict("records"), "paper": paper.to_dict("records")}
