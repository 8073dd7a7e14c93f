"""The efficient-student track (Hsu et al. 2020): students trained on the MT chain's Seq-KD data
(``students/models/<name>``, fastdec.workflow.students), one ``fastdec bench`` run per decodable student, and the
paper's Tables 1-3 and Figure 2 (fastdec.students.tables) with the paper's numbers beside ours.

Run ``students/bench/<split>/<name>`` (``decode.split``: test, or final = data.download.final_test; every method on the student's weights in one process, interleaved per sentence):
``fairseq:beam=1`` and ``greedy`` (the engine with the StudentVerifier) at batch 1 on ``decode.threads`` threads,
``fairseq:beam=B`` at batch 1 and ``fairseq:beam=B:batch=N`` (batched), and with the GAD track on and
``decode.gad_k`` set, ``gad:k=K`` with the GAD track's drafter and the student as its verifier (beyond the paper).
The L0-phase models (still gated) are not benchmarked; their pruned, fine-tuned versions are.
"""
from __future__ import annotations

from typing import Dict, List

from . import BenchRun, TableItem, section as validated_section

_TABLES = "students/tables"


def section(config: dict) -> dict:
    from fastdec.workflow.students import check_config

    st = validated_section(config, "students")
    check_config(st, config)
    return st


def decoded_models(st: dict) -> Dict[str, dict]:
    """Model name -> its structure plus ``pruned`` (the benchmarked students)."""
    from fastdec.workflow.students import pruned_names, structure

    out = {n: {**m, "ffn": m.get("ffn", True), "pruned": False} for n, m in st["models"].items()}
    for _, ft, _ in pruned_names(st):
        m = structure(st, ft)
        out[ft] = {**m, "ffn": m.get("ffn", True), "pruned": True}
    return out


def gad_method(config: dict, st: dict, R: str):
    k = st["decode"]["gad_k"]
    if not (k and config["tracks"].get("gad")):
        return None, None
    drafter = f"{R}/gad/models/drafter_k{k}/model.pt"
    return f"gad:k={k}:checkpoint={drafter}", drafter


def methods(config: dict, st: dict, R: str) -> List[str]:
    dec = st["decode"]
    out = ["fairseq:beam=1", "greedy", f"fairseq:beam={dec['beam']}",
           f"fairseq:beam={dec['beam']}:batch={dec['batch_size']}"]
    gad, _ = gad_method(config, st, R)
    return out + ([gad] if gad else [])


def run_dir(name: str, split: str = "test") -> str:
    return f"students/bench/{split}/{name}"


def bench_runs(config: dict, R: str) -> Dict[str, BenchRun]:
    st = section(config)
    dec, data = st["decode"], config.get("data", {})
    src, tgt = data.get("src_lang", "src"), data.get("tgt_lang", "tgt")
    split = dec["split"]
    _, drafter = gad_method(config, st, R)
    return {run_dir(name, split): BenchRun(
        "students", checkpoint=f"{R}/students/models/{name}/model.pt",
        dictionary=f"{R}/data-bin/{st['data']}/dict.{src}.txt", src=f"{R}/data/bpe/{split}.{src}",
        methods=methods(config, st, R), ref=f"{R}/data/raw/{split}.{tgt}", lang=tgt, drafters=[drafter] if drafter else [],
        limit=dec["sentences"], warmup=dec["warmup"], threads=dec["threads"],
        # no GPU asked for: the paper's CPU batch-1 setting, on the CPU even in a CUDA config
        device=config.get("device", "cpu") if dec["gpus"] else "cpu",
        max_len_a=config["decode"]["max_len_a"], max_len_b=config["decode"]["max_len_b"], mem_mb=dec["mem_mb"],
        runtime=dec["runtime"], gpus=dec["gpus"]) for name in decoded_models(st)}


def table_items(config: dict, R: str) -> Dict[str, TableItem]:
    st = section(config)
    runs = decoded_models(st)
    inputs = [f"{R}/{run_dir(n, st['decode']['split'])}/summary.csv" for n in runs] + [f"{R}/students/models/{n}/model.pt" for n in runs]
    items = {"students_table1.csv": inputs, "students_figure2.csv": inputs, "students_figure2.png": inputs,
             "students_table3.csv": inputs}
    if st.get("pruning"):
        items["students_table2.csv"] = inputs
    if gad_method(config, st, R)[0]:
        items["students_gad_verifier.csv"] = inputs
    return {f"{_TABLES}/{p}": TableItem("students", p.rsplit(".", 1)[0], i) for p, i in items.items()}


def make_table(name: str, config: dict, R: str, output: str) -> None:
    from fastdec.students import tables as T
    from fastdec.workflow.students import pruned_names

    st = section(config)
    dec = st["decode"]
    runs = {n: {**m, "summary": f"{R}/{run_dir(n, dec['split'])}/summary.csv", "checkpoint": f"{R}/students/models/{n}/model.pt"}
            for n, m in decoded_models(st).items()}
    if name == "students_gad_verifier":
        from fastdec.bench.methods import parse_method

        label = parse_method(gad_method(config, st, R)[0]).label
        return T.dump(T.verifier_table({n: r["summary"] for n, r in runs.items()}, label), output)
    df = T.collect(runs, dec["beam"], dec["batch_size"])
    if name == "students_figure2" and output.endswith(".png"):
        return T.plot_figure2(T.figure2_table(df), output, title=config.get("experiment", ""))
    out = {"students_table1": lambda: T.table1(df, st["baseline"]),
           "students_figure2": lambda: T.figure2_table(df),
           "students_table2": lambda: T.table2(df, st["pruning"]["base"], pruned_names(st)),
           "students_table3": lambda: T.table3(df, st["baseline"])}[name]()
    T.dump(out, output)
