"""The Blockwise track (Stern et al. 2018): combined scoring/proposal models trained on the MT chain's AT models
(``blockwise/models/<variant>_k<K>``, :func:`model`), one ``fastdec bench`` run per model, and the paper's
tables and figures (tables.py).

Runs (every method on the model's weights in one process, batch 1, interleaved per sentence):

* ``blockwise/bench/valid/<variant>_k<K>``  greedy decoding with p_1 and exact blockwise decoding at every k the
  model serves (its first k heads: every configured k <= K with ``share_heads``, else K); the "both" models add top-t
  approximate acceptance (``blockwise:k=4:topk=2``, Sec. 5.1) and minimum block sizes (``blockwise:k=4:min_block=2``,
  Sec. 5.3). Table 1, its scatter plot, the approximate / minimum-block tables and Figure 4 read these.
* ``blockwise/bench/test/both_k<K>``  fairseq beam search, greedy and exact blockwise decoding at every k, plus the
  other head precision on CPU (``compare_precision``), greedy and exact blockwise on each extra verifier backend
  (``decode.backends``, CPU): Table 4 and the comparison with the GAD track.
* ``blockwise/bench/batch/both_k<K>`` (with ``decode.batch_sizes``; the first ``batch_sentences`` test sentences):
  fairseq beam search, fairseq greedy, engine greedy and exact blockwise at the largest k of the largest "both" model,
  at every batch size -> the batch curve ``blockwise_batch`` (beyond the paper, which times batch 1 only).

Every blockwise method names its head precision (``blockwise:k=4:precision=int8``): the config's
``blockwise.decode.head_precision``, and the other one in the precision comparison.
"""
from __future__ import annotations

import json
import os
from typing import Dict, List, Tuple

from fastdec.layout import ResultsLayout
from fastdec.tracks.base import (BenchRun, TableItem, backend_methods, policy_item, policy_methods,
                                 section as validated_section)
from fastdec.tracks.specs import Model

# variant -> (base AT model of the MT chain, data-bin folder, base parameters frozen)
VARIANT_SETUP = {
    "regular": ("baseline", "raw", True),
    "distill": ("verifier", "distill", True),
    "finetune": ("baseline", "raw", False),
    "both": ("verifier", "distill", False),
}
TRAIN_KEYS = ("max_update", "max_tokens", "update_freq", "lr", "warmup_updates", "dropout", "label_smoothing",
              "weight_decay", "clip_norm", "adam_betas", "save_interval_updates", "keep_last", "seed")


def check_config(bw: dict, device: str) -> None:
    """Cross-field checks the JSON schema cannot express (clear ``ValueError``)."""
    ks = bw["block_sizes"]
    bad = [ell for ell in bw["decode"]["min_block_sizes"] if ell > max(ks)]
    if bad:
        raise ValueError(f"config blockwise.decode.min_block_sizes {bad}: a minimum block size ℓ must not exceed the "
                         f"largest block size k = {max(ks)} (Sec. 5.3: 1 <= ℓ <= k)")
    if bw["decode"]["head_precision"] == "int8" and device != "cpu":
        raise ValueError("config blockwise.decode.head_precision: int8 proposal heads are CPU-only; use float with "
                         f"device {device!r}")


def train_block_sizes(bw: dict) -> List[int]:
    """Block sizes K that get a model: every k (paper), or only max(k) with ``share_heads``."""
    ks = sorted(bw["block_sizes"])
    return [ks[-1]] if bw["share_heads"] else ks


def models(bw: dict) -> List[tuple]:
    """(variant, K) of every blockwise model to train."""
    return [(v, k) for v in bw["variants"] for k in train_block_sizes(bw)]


def train_spec(bw: dict, variant: str, k, base: str) -> dict:
    """The JSON spec `fastdec train` turns into a fairseq-train command (architecture copied from the base)."""
    t = bw["train"]
    extra = {
        "block-size": int(k),
        "load-base": base,
        "freeze-base": VARIANT_SETUP[variant][2],
        "p1-through-layer": t["p1_through_layer"],
        "all-heads": t["loss"] == "all_heads",
        "label-smoothing": t["label_smoothing"],
    }
    extra.update(t["extra_args"])
    spec = {"arch": "blockwise_transformer_from_base", **{key: t[key] for key in TRAIN_KEYS}, "extra_args": extra}
    if t.get("stop_time_minutes"):  # fastdec.train turns max_minutes into fairseq's --stop-time-hours
        spec["max_minutes"] = t["stop_time_minutes"]
    if not VARIANT_SETUP[variant][2] and t.get("finetune_lr"):
        spec["lr"] = t["finetune_lr"]
    return spec


MODEL_NAMES = r"(?:regular|distill|finetune|both)_k\d+"


def check(config: dict) -> None:
    check_config(config["blockwise"], config["device"])


def model(config: dict, R: str, name: str, plugin: str) -> Model:
    """``blockwise/models/<variant>_k<K>``: heads on top of the MT chain's baseline or verifier (VARIANT_SETUP)."""
    bw, L = config["blockwise"], ResultsLayout(R)
    variant, k = name.rsplit("_k", 1)
    base_model, data_name, _ = VARIANT_SETUP[variant]
    base, data = L.model(base_model), L.data_bin(data_name)
    src = config.get("data", {}).get("src_lang", "src")
    return Model(json.dumps(train_spec(bw, variant, k, base)), data, {"base": base, "data": f"{data}/dict.{src}.txt"},
                 bw["train"], f"--criterion blockwise_cross_entropy --user-dir {plugin}")


GAD_RUN = "gad/bench/test"  # the GAD track's test benchmark (fastdec.tracks.gad)
_TABLES = "blockwise/tables"


def section(config: dict) -> dict:
    """The ``blockwise:`` section validated by its schema (defaults filled in, on a copy) and cross-checked."""
    bw = validated_section(config, "blockwise")
    check_config(bw, config.get("device", "cpu"))  # ℓ <= max(k); int8 heads on CPU only
    return bw


def decode_block_sizes(bw: dict, trained_k: int) -> List[int]:
    """Block sizes a model trained with K heads is decoded at (its first k heads serve every smaller k)."""
    return [k for k in sorted(bw["block_sizes"]) if k <= trained_k] if bw["share_heads"] else [trained_k]


def batch_specs(bw: dict, trained_k: int) -> List[str]:
    """The batch curves (each at every decode.batch_sizes): beam search (the 1x), fairseq greedy, engine greedy and
    exact blockwise at the largest k the model serves."""
    dec = bw["decode"]
    k = max(decode_block_sizes(bw, trained_k))
    top = f"blockwise:k={k}:precision={dec['head_precision']}"
    return [f"fairseq:beam={dec['beam']}", "fairseq:beam=1", "greedy", top, *policy_methods(dec.get("policies", []), [top])]


def methods(bw: dict, split: str, variant: str, trained_k: int, device: str = "cpu") -> List[str]:
    """The methods of one run (see the module docstring)."""
    dec, ks = bw["decode"], decode_block_sizes(bw, trained_k)
    prec = dec["head_precision"]
    if split == "batch":
        from fastdec.bench.batch_curves import at_batch_sizes

        return at_batch_sizes(batch_specs(bw, trained_k), dec["batch_sizes"])
    if split == "valid":
        out = ["greedy"] + [f"blockwise:k={k}:precision={prec}" for k in ks]
        if variant == "both":
            out += [f"blockwise:k={k}:topk={t}:precision={prec}" for k in ks for t in dec["topk"]]
            out += [f"blockwise:k={k}:min_block={ell}:precision={prec}" for k in ks for ell in dec["min_block_sizes"]
                    if ell <= k]
        return out
    # fairseq greedy: an independent greedy reference for the exact rows (the e2e test compares outputs)
    out = list(dict.fromkeys([f"fairseq:beam={dec['beam']}", "fairseq:beam=1", "greedy"]))
    out += [f"blockwise:k={k}:precision={prec}" for k in ks]
    if dec["compare_precision"] and device == "cpu":
        other = "float" if prec == "int8" else "int8"
        out += [f"blockwise:k={k}:precision={other}" for k in ks]
    fast = backend_methods(dec.get("backends", []), ["greedy"] + [f"blockwise:k={k}:precision={prec}" for k in ks],
                           device)
    # beyond the paper: the largest k again with a draft-length policy (decode.policies), on every backend
    top = [f"blockwise:k={max(ks)}:precision={prec}"] + [s for s in fast if s.startswith(f"blockwise:k={max(ks)}:")]
    return out + fast + policy_methods(dec.get("policies", []), top)


def runs(bw: dict) -> Dict[str, Tuple[str, str, int]]:
    """Run dir (relative to R) -> (split, variant, trained K) of every benchmark run."""
    out = {f"blockwise/bench/valid/{v}_k{k}": ("valid", v, k) for v, k in models(bw)}
    out.update({f"blockwise/bench/test/{v}_k{k}": ("test", v, k) for v, k in models(bw) if v == "both"})
    both = [k for v, k in models(bw) if v == "both"]
    if bw["decode"]["batch_sizes"] and both:
        out[f"blockwise/bench/batch/both_k{max(both)}"] = ("batch", "both", max(both))
    return out


def example_run(bw: dict, config: dict) -> Tuple[str, str]:
    """Sec. 7.4's example: the "both" test run with the largest K and its exact blockwise method at that k."""
    run, (_, _, k) = max(((r, key) for r, key in runs(bw).items() if key[0] == "test"), key=lambda x: x[1][2])
    k = max(decode_block_sizes(bw, k))
    return run, f"blockwise:k={k}:precision={bw['decode']['head_precision']}"


def bench_runs(config: dict, R: str) -> Dict[str, BenchRun]:
    bw = section(config)
    dec, data, device = bw["decode"], config.get("data", {}), config.get("device", "cpu")
    src, tgt = data.get("src_lang", "src"), data.get("tgt_lang", "tgt")
    data_split, L = {"batch": "test"}, ResultsLayout(R)  # the batched run decodes test sentences
    return {run: BenchRun(
        "blockwise", checkpoint=L.model(f"{variant}_k{k}", "blockwise/"), dictionary=L.dictionary(src),
        src=L.bpe(data_split.get(split, split), src), methods=methods(bw, split, variant, k, device),
        ref=L.raw(data_split.get(split, split), tgt),
        lang=tgt, limit=dec[f"{split}_sentences"], warmup=dec["warmup"],
        repeats=dec["batch_repeats"] if split == "batch" else 1, threads=dec["threads"],
        exclusive=dec["exclusive"], device=device,
        max_len_a=config["decode"]["max_len_a"], max_len_b=config["decode"]["max_len_b"], mem_mb=dec["mem_mb"],
        runtime=dec["runtime"], gpus=dec["gpus"]) for run, (split, variant, k) in runs(bw).items()}


def table_items(config: dict, R: str) -> Dict[str, TableItem]:
    """Table 1 and its scatter plot always; the "both" tables with the "both" variant; the GAD comparison with the
    GAD track on."""
    bw, L = section(config), ResultsLayout(R)
    tgt = config.get("data", {}).get("tgt_lang", "tgt")

    def summaries(split, both_only=True):
        return [L.run(f"{run}/summary.csv") for run, (s, v, _) in runs(bw).items()
                if s == split and (v == "both" or not both_only)]

    valid, both = summaries("valid", both_only=False), summaries("valid")
    items = {"blockwise_table1.csv": valid, "blockwise_table1_scatter.png": valid}
    if "both" in bw["variants"]:
        items.update({"blockwise_approx.csv": both, "blockwise_minblock.csv": both, "blockwise_figure4.csv": both,
                      "blockwise_figure4.png": both, "blockwise_table4.csv": summaries("test")})
        run, method = example_run(bw, config)
        src = config.get("data", {}).get("src_lang", "src")
        items["blockwise_example.csv"] = [L.run(f"{run}/sentences.jsonl"), L.run(f"{run}/summary.csv"),
                                          L.model(os.path.basename(run), "blockwise/"), L.bpe("test", src),
                                          L.dictionary(src)]
        batch = summaries("batch")
        if batch:
            items.update({"blockwise_batch.csv": batch, "blockwise_batch.png": batch})
        if config["tracks"].get("gad"):
            items["blockwise_vs_gad.csv"] = summaries("test") + [L.raw("test", tgt)] + [
                L.run(f"{GAD_RUN}/{f}") for f in ("summary.csv", "sentences.jsonl", "meta.json")]
    out = {f"{_TABLES}/{path}": TableItem("blockwise", path.rsplit(".", 1)[0], inputs)
           for path, inputs in items.items()}
    return {**out, **policy_item("blockwise", {run: b.methods for run, b in bench_runs(config, R).items()}, R)}
