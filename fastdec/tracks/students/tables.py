"""Tables 1-3 and Figure 2 of Hsu et al. (2020) from the track's benchmark runs (fastdec.tracks.students).

Every model's run holds the same methods (the one results schema, docs/RESULTS.md): ``fairseq-greedy`` and
``greedy`` (engine) at batch 1 on one thread, ``fairseq-beam<B>`` at batch 1 and ``fairseq-beam<B>-bs<N>``; with
``students.decode.gpu``, a GPU run per model gives ``fairseq-beam<B>-bs<N>`` at the GPU batch size (the GPU columns,
blank and labelled ``gpu_columns`` otherwise).
Speeds are output tokens per second (BPE tokens incl. EOS, what fairseq's wps counts): ``mean_out_len *
sent_per_s``. BLEU is the beam-search BLEU of the batch-1 run (the paper decodes with beam 5). Parameters and head
counts come from each checkpoint.
"""
from __future__ import annotations

from typing import Dict, List, Optional

import pandas as pd

from fastdec.tracks.students import paper as P


def model_info(checkpoint: str) -> dict:
    """Parameters (distinct tensors of the model state: tied embeddings count once), the decoder's own and its
    feed-forward part (``decoder_params``, ``decoder_ffn_params``: Hsu §2.3) and heads per attention kind
    (``heads_enc``, ``heads_encdec``, ``heads_dec``) of one checkpoint."""
    import torch

    from fastdec.tracks.students.sizes import checkpoint_decoder_split

    state = torch.load(checkpoint, map_location="cpu", weights_only=False)
    cfg = state["cfg"]["model"]
    head_dim = int(cfg.encoder_embed_dim) // int(cfg.encoder_attention_heads)
    seen, params = set(), 0
    heads = {"enc": 0, "encdec": 0, "dec": 0}
    for k, v in state["model"].items():
        if k.endswith(("_float_tensor", "version")) or "head_gate" in k or v.data_ptr() in seen:
            continue
        seen.add(v.data_ptr())
        params += v.numel()
        if k.endswith("q_proj.weight"):
            kind = "enc" if k.startswith("encoder.") else ("encdec" if "encoder_attn" in k else "dec")
            heads[kind] += v.shape[0] // head_dim
    decoder, ffn = checkpoint_decoder_split(state["model"])
    return {"params": int(params), "decoder_params": decoder, "decoder_ffn_params": ffn,
            **{f"heads_{k}": n for k, n in heads.items()}}


def speeds(summary: pd.DataFrame, beam: int, batch: int) -> dict:
    """The figures one model contributes to every table."""
    rows = summary.set_index("label")

    def tps(label):
        if label not in rows.index:
            return float("nan")
        r = rows.loc[label]
        return float(r["mean_out_len"] * r["sent_per_s"])

    from fastdec.bench.methods import parse_method

    beam_label = parse_method(f"fairseq:beam={beam}").label
    batched = parse_method(f"fairseq:beam={beam}:batch={batch}").label
    return {"bleu": float(rows.loc[beam_label, "bleu"]) if beam_label in rows.index else float("nan"),
            "bleu_greedy": float(rows.loc["greedy", "bleu"]),
            "wps_cpu_b1_greedy": tps("greedy"), "wps_cpu_b1_fairseq_greedy": tps("fairseq-greedy"),
            "wps_cpu_b1_beam": tps(beam_label), "wps_batched_beam": tps(batched),
            # fairseq's own greedy search against the engine's greedy: an independent check (greedy against itself
            # would always be 100)
            "identical_to_greedy_pct": float(rows.loc["fairseq-greedy", "identical_to_greedy_pct"])
            if "fairseq-greedy" in rows.index else float("nan")}


NO_GPU = ("blank: this config has no GPU run (no students.decode.gpu); the paper's GPU figures are beam 5 at "
          "batch 128 on one V100")


def gpu_speed(summary: pd.DataFrame, beam: int, batch: int) -> dict:
    """The GPU columns one model contributes: beam search at the GPU batch size (``students.decode.gpu``)."""
    from fastdec.bench.methods import parse_method

    r = summary.set_index("label").loc[parse_method(f"fairseq:beam={beam}:batch={batch}").label]
    return {"wps_gpu_batched_beam": float(r["mean_out_len"] * r["sent_per_s"]),
            "gpu_columns": f"GPU run: beam {beam}, batch {batch} (students.decode.gpu)"}


def collect(runs: Dict[str, dict], beam: int, batch: int, gpu_batch: Optional[int] = None) -> pd.DataFrame:
    """One row per model: ``runs`` maps model name -> {"summary": path, "checkpoint": path, **structure}, and
    "gpu_summary" where the model has a GPU run (decoded at ``gpu_batch``)."""
    out = []
    for name, r in runs.items():
        row = {"model": name, **{k: v for k, v in r.items() if k not in ("summary", "gpu_summary", "checkpoint")}}
        row.update(speeds(pd.read_csv(r["summary"]), beam, batch))
        row.update(gpu_speed(pd.read_csv(r["gpu_summary"]), beam, gpu_batch) if r.get("gpu_summary")
                   else {"wps_gpu_batched_beam": float("nan"), "gpu_columns": NO_GPU})
        row.update(model_info(r["checkpoint"]))
        out.append(row)
    return pd.DataFrame(out)


def _speedup(df: pd.DataFrame, col: str, base: str) -> pd.Series:
    ref = float(df.loc[df["model"] == base, col].iloc[0])
    return (100 * (df[col] / ref - 1)).round(1)


def _speedups(df: pd.DataFrame, base: str) -> pd.DataFrame:
    """Speedup over the baseline of the CPU batch-1, batched and GPU speeds (the GPU one blank without GPU runs)."""
    df["speedup_cpu_b1_pct"] = _speedup(df, "wps_cpu_b1_beam", base)
    df["speedup_batched_pct"] = _speedup(df, "wps_batched_beam", base)
    df["speedup_gpu_pct"] = _speedup(df, "wps_gpu_batched_beam", base)
    return df


def table1(df: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Self-attention vs AAN vs SSRU, with / without the decoder FFN, at the baseline's depth."""
    b = df.loc[df["model"] == baseline].iloc[0]
    sub = df[(df["encoder_layers"] == b["encoder_layers"]) & (df["decoder_layers"] == b["decoder_layers"])
             & ~df["pruned"]].copy()
    sub = _speedups(sub, baseline)
    paper = [P.TABLE1.get((r["self_attn"], bool(r["ffn"])), (None, None, None)) for _, r in sub.iterrows()]
    sub["paper_bleu"], sub["paper_wps_gpu"], sub["paper_speedup_pct"] = zip(*paper) if paper else ([], [], [])
    sub["paper_note"] = P.TABLE1_NOTE
    cols = ["model", "self_attn", "ffn", "bleu", "wps_cpu_b1_beam", "wps_batched_beam", "wps_gpu_batched_beam",
            "speedup_cpu_b1_pct", "speedup_batched_pct", "speedup_gpu_pct", "gpu_columns", "params", "decoder_params",
            "decoder_ffn_params", "paper_bleu", "paper_wps_gpu", "paper_speedup_pct", "paper_note"]
    return sub[cols].reset_index(drop=True)


def figure2_table(df: pd.DataFrame) -> pd.DataFrame:
    """One point per encoder/decoder depth pair of the SSRU w/o FFN students (the paper's Figure 2 grid)."""
    sub = df[(df["self_attn"] == "ssru") & ~df["ffn"].astype(bool) & ~df["pruned"]].copy()
    sub["depth"] = sub["encoder_layers"].astype(str) + "-" + sub["decoder_layers"].astype(str)
    sub["paper_note"] = P.FIGURE2_NOTE
    cols = ["model", "depth", "bleu", "wps_cpu_b1_beam", "wps_cpu_b1_greedy", "wps_batched_beam", "params",
            "paper_note"]
    return sub.sort_values(["decoder_layers", "encoder_layers"])[cols].reset_index(drop=True)


def plot_figure2(table: pd.DataFrame, output: str, title: str = "") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 4))
    ax.plot(table["wps_cpu_b1_beam"], table["bleu"], "o")
    for _, r in table.iterrows():
        ax.annotate(r["depth"], (r["wps_cpu_b1_beam"], r["bleu"]), textcoords="offset points", xytext=(4, 4))
    ax.set_xlabel("output tokens / s (CPU, batch 1, one thread, beam 5)")
    ax.set_ylabel("BLEU")
    ax.set_title(f"SSRU w/o FFN: encoder-decoder depths {title}".strip())
    fig.text(0.01, 0.01, "paper: no point values in the text (see paper_note)", fontsize=7)
    fig.tight_layout()
    fig.savefig(output, dpi=120)
    plt.close(fig)


def table2(df: pd.DataFrame, bases: List[str], pruned: List[tuple]) -> pd.DataFrame:
    """Heads kept (enc / enc-dec / dec), BLEU and speed of each pruning base and its pruned models, the paper's row
    beside each (by decoder self-attention and pruned or not; none for an AAN base)."""
    rows = []
    for base in bases:
        mine = [(ft, lam) for _, ft, lam in pruned if ft.startswith(f"{base}_pruned_")]
        for name, lam in [(base, None)] + mine:
            r = df.loc[df["model"] == name].iloc[0]
            dec = "-" if r["self_attn"] != "attention" else str(int(r["heads_dec"]))
            label, heads, bleu = P.TABLE2.get((r["self_attn"], lam is not None), (None, None, None))
            rows.append({"model": name, "base": base, "lambda": lam,
                         "heads": f"{int(r['heads_enc'])}/{int(r['heads_encdec'])}/{dec}", "bleu": r["bleu"],
                         "wps_cpu_b1_beam": r["wps_cpu_b1_beam"], "wps_batched_beam": r["wps_batched_beam"],
                         "params": r["params"], "paper_row": label, "paper_heads": heads, "paper_bleu": bleu})
    out = pd.DataFrame(rows)
    out["paper_note"] = P.TABLE2_NOTE
    return out


def table3_paper_row(r: pd.Series, base: pd.Series, pruning_bases: List[str]) -> Optional[str]:
    """The row of the paper's Table 3 a student is: the baseline; SSRU and "+ Remove ffn" at the baseline's depth;
    "+ 12-1" an SSRU w/o FFN pruning base with a shallower decoder; "+ Prune heads" that student pruned."""
    if r["model"] == base["model"]:
        return "Baseline"
    if r["self_attn"] != "ssru":
        return None
    if r["pruned"]:
        return None if r["ffn"] else "+ Prune heads"
    if (r["encoder_layers"], r["decoder_layers"]) == (base["encoder_layers"], base["decoder_layers"]):
        return "SSRU" if r["ffn"] else "+ Remove ffn"
    if not r["ffn"] and r["model"] in pruning_bases and r["decoder_layers"] < base["decoder_layers"]:
        return "+ 12-1"
    return None


def table3(df: pd.DataFrame, baseline: str, pruning_bases: List[str] = ()) -> pd.DataFrame:
    """Every student: BLEU, CPU batch-1, batched and GPU speed, parameters, speedup vs the baseline; the paper's
    figures on the row of the student that paper row is (:func:`table3_paper_row`), blank on the others."""
    out = _speedups(df.copy(), baseline)
    base = out.loc[out["model"] == baseline].iloc[0]
    paper = {row[0]: row for row in P.TABLE3}
    rows = [paper.get(table3_paper_row(r, base, list(pruning_bases)), (None,) * 5) for _, r in out.iterrows()]
    for i, col in enumerate(["paper_row", "paper_bleu", "paper_speedup_gpu_pct", "paper_speedup_cpu_pct",
                             "paper_params_m"]):
        out[col] = [r[i] for r in rows]
    out["paper_note"] = P.TABLE3_NOTE
    cols = ["model", "self_attn", "ffn", "encoder_layers", "decoder_layers", "pruned", "bleu", "bleu_greedy",
            "wps_cpu_b1_beam", "wps_cpu_b1_greedy", "wps_cpu_b1_fairseq_greedy", "wps_batched_beam",
            "wps_gpu_batched_beam", "speedup_cpu_b1_pct", "speedup_batched_pct", "speedup_gpu_pct", "gpu_columns",
            "params", "heads_enc", "heads_encdec", "heads_dec", "identical_to_greedy_pct", "paper_row", "paper_bleu",
            "paper_speedup_gpu_pct", "paper_speedup_cpu_pct", "paper_params_m", "paper_note"]
    return out[cols]


def verifier_table(summaries: Dict[str, str], gad_label: Optional[str]) -> pd.DataFrame:
    """Beyond the paper: each student as GAD's verifier (the student's greedy, GAD and the speedup over both)."""
    rows = []
    for name, path in summaries.items():
        s = pd.read_csv(path).set_index("label")
        if gad_label is None or gad_label not in s.index:
            continue
        g, gad = s.loc["greedy"], s.loc[gad_label]
        rows.append({"model": name, "greedy_ms": g["ms_per_sentence"], "gad_ms": gad["ms_per_sentence"],
                     "gad_speedup_vs_student_greedy": round(g["ms_per_sentence"] / gad["ms_per_sentence"], 3),
                     "identical_to_greedy_pct": gad["identical_to_greedy_pct"], "bleu": gad["bleu"],
                     "tokens_per_iteration": gad["tokens_per_iteration"]})
    return pd.DataFrame(rows)


def dump(df: pd.DataFrame, output: str) -> None:
    df.to_csv(output, index=False)
    print(df.to_string(index=False), flush=True)
