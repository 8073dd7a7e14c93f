"""The Blockwise track (Stern et al. 2018): combined scoring/proposal models trained on the MT chain's AT models
(``blockwise/models/<variant>_k<K>``, fastdec.workflow.models), one ``fastdec bench`` run per model, and the paper's
tables and figures (fastdec.blockwise.tables).

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

import os
from typing import Dict, List, Tuple

from . import BenchRun, TableItem, backend_methods, policy_methods, section as validated_section

GAD_RUN = "gad/bench/test"  # the GAD track's test benchmark (fastdec.tracks.gad)
_TABLES = "blockwise/tables"


def section(config: dict) -> dict:
    """The ``blockwise:`` section validated by its schema (defaults filled in, on a copy) and cross-checked."""
    from fastdec.workflow.blockwise import check_config

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
    from fastdec.workflow.blockwise import models

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
    data_split = {"batch": "test"}  # the batched run decodes test sentences
    return {run: BenchRun(
        "blockwise", checkpoint=f"{R}/blockwise/models/{variant}_k{k}/model.pt",
        dictionary=f"{R}/data-bin/raw/dict.{src}.txt", src=f"{R}/data/bpe/{data_split.get(split, split)}.{src}",
        methods=methods(bw, split, variant, k, device), ref=f"{R}/data/raw/{data_split.get(split, split)}.{tgt}",
        lang=tgt, limit=dec[f"{split}_sentences"], warmup=dec["warmup"], threads=dec["threads"], device=device,
        max_len_a=config["decode"]["max_len_a"], max_len_b=config["decode"]["max_len_b"], mem_mb=dec["mem_mb"],
        runtime=dec["runtime"], gpus=dec["gpus"]) for run, (split, variant, k) in runs(bw).items()}


def table_items(config: dict, R: str) -> Dict[str, TableItem]:
    """Table 1 and its scatter plot always; the "both" tables with the "both" variant; the GAD comparison with the
    GAD track on."""
    bw = section(config)
    tgt = config.get("data", {}).get("tgt_lang", "tgt")

    def summaries(split, both_only=True):
        return [f"{R}/{run}/summary.csv" for run, (s, v, _) in runs(bw).items()
                if s == split and (v == "both" or not both_only)]

    valid, both = summaries("valid", both_only=False), summaries("valid")
    items = {"blockwise_table1.csv": valid, "blockwise_table1_scatter.png": valid}
    if "both" in bw["variants"]:
        items.update({"blockwise_approx.csv": both, "blockwise_minblock.csv": both, "blockwise_figure4.csv": both,
                      "blockwise_figure4.png": both, "blockwise_table4.csv": summaries("test")})
        run, method = example_run(bw, config)
        src = config.get("data", {}).get("src_lang", "src")
        items["blockwise_example.csv"] = [f"{R}/{run}/sentences.jsonl", f"{R}/{run}/summary.csv",
                                          f"{R}/{run.replace('bench/test', 'models')}/model.pt",
                                          f"{R}/data/bpe/test.{src}", f"{R}/data-bin/raw/dict.{src}.txt"]
        batch = summaries("batch")
        if batch:
            items.update({"blockwise_batch.csv": batch, "blockwise_batch.png": batch})
        if config["tracks"].get("gad"):
            items["blockwise_vs_gad.csv"] = summaries("test") + [f"{R}/data/raw/test.{tgt}"] + [
                f"{R}/{GAD_RUN}/{f}" for f in ("summary.csv", "sentences.jsonl", "meta.json")]
    return {f"{_TABLES}/{path}": TableItem("blockwise", path.rsplit(".", 1)[0], inputs)
            for path, inputs in items.items()}


def make_table(name: str, config: dict, R: str, output: str) -> None:
    """Write one table (CSV) or figure (PNG; ``blockwise_figure4`` is both, by the output's extension)."""
    from fastdec.blockwise import tables as T

    bw = section(config)
    dec = bw["decode"]
    prec, beam, title = dec["head_precision"], dec["beam"], config.get("experiment", "")
    item = next(i for i in table_items(config, R).values() if i.name == name)
    if name == "blockwise_example":
        from fastdec.bench.trace import trace_table

        run, method = example_run(bw, config)
        sentences, _, checkpoint, src, dictionary = item.inputs
        out = trace_table(checkpoint, os.path.dirname(dictionary), src, method, run=f"{R}/{run}",
                          max_len_a=config["decode"]["max_len_a"], max_len_b=config["decode"]["max_len_b"])
        out.to_csv(output, index=False)
        print(out.to_string(index=False), flush=True)
        return
    if name == "blockwise_batch":
        from fastdec.bench.batch_curves import write_batch_curve
        from fastdec.bench.results import read_run

        run, (_, _, k) = next((r, key) for r, key in runs(bw).items() if key[0] == "batch")
        specs = batch_specs(bw, k)
        write_batch_curve(read_run(f"{R}/{run}"), specs, dec["batch_sizes"], specs[0], "blockwise", output,
                          title=(f"{title}: exact blockwise ({specs[3]}) at batch sizes {dec['batch_sizes']}, "
                                 f"{config.get('device', 'cpu')}, {dec['threads']} thread(s)"))
        return
    df = T.load_runs({f"{R}/{run}": key for run, key in runs(bw).items() if f"{R}/{run}/summary.csv" in item.inputs})
    if name == "blockwise_table1_scatter":
        return T.plot_table1(df, output, bw["block_sizes"], prec, title=title)
    if name == "blockwise_figure4" and output.endswith(".png"):
        return T.plot_figure4(T.figure4_table(df, prec), output, title=title)
    if name == "blockwise_vs_gad":
        from fastdec.bench.results import read_run
        from fastdec.text import read_lines

        tgt = config.get("data", {}).get("tgt_lang", "tgt")
        n = int(df.loc[df["method"] == "greedy", "n_sentences"].iloc[0])  # the sentences our test runs decoded
        gad = read_run(f"{R}/{GAD_RUN}").resummarize(first=n, refs=read_lines(f"{R}/data/raw/test.{tgt}"), lang=tgt)
        out = T.comparison_table(df, gad, beam)
    else:
        out = {"blockwise_table1": lambda: T.table1(df, bw["block_sizes"], prec),
               "blockwise_approx": lambda: T.approx_table(df, dec["topk"], prec),
               "blockwise_minblock": lambda: T.min_block_table(df, dec["min_block_sizes"], prec),
               "blockwise_figure4": lambda: T.figure4_table(df, prec),
               "blockwise_table4": lambda: T.table4(df, beam, prec)}[name]()
    out.to_csv(output, index=False)
    print(out.to_string(index=False), flush=True)
