"""The efficient-student track (Hsu et al. 2020): students trained on the MT chain's Seq-KD data
(``students/models/<name>``, :func:`model`), one ``fastdec bench`` run per decodable student, and the
paper's Tables 1-3 and Figure 2 (tables.py) with the paper's numbers beside ours.

GPU columns (Tables 1 and 3): with ``decode.gpu`` set, a second run ``students/bench_gpu/<split>/<name>`` per
student decodes ``fairseq:beam=B:batch=N`` on one GPU (the paper: beam 5, batch 128, one V100).

Run ``students/bench/<split>/<name>`` (``decode.split``: test, or final = data.download.final_test; every method on the student's weights in one process, interleaved per sentence):
``fairseq:beam=1`` and ``greedy`` (the engine with the StudentVerifier) at batch 1 on ``decode.threads`` threads,
``fairseq:beam=B`` at batch 1 and ``fairseq:beam=B:batch=N`` (batched), and with the GAD track on and
``decode.gad_k`` set, ``gad:k=K`` with the GAD track's drafter and the student as its verifier (beyond the paper).
The L0-phase models (still gated) are not benchmarked; their pruned, fine-tuned versions are.

Training: What the efficient-student track trains (through the ONE training rule, :func:`model`) and prunes
(rules.smk). All functions take the validated ``students:`` section (defaults filled in).

Models, under ``results/<exp>/students/models/<name>/``:

* ``<name>``              every entry of ``students.models``, trained on the Seq-KD data from scratch
                          (``init_from: none``, the paper) or from ``students/init/<name>.pt``, the verifier's shared
                          weights (``init_from: verifier``, fastdec.tracks.students.warm_start);
* ``<base>_l0_<lam>``     the pruning base fine-tuned with head gates and lambda * L_c (criterion
                          l0_head_cross_entropy);
* ``<base>_pruned_<lam>`` the L0 model pruned and fine-tuned (``--finetune-from-model`` and ``--heads-from``).

Each of the two phases starts from ``students/init/<its name>.pt`` (rules.smk, fastdec.tracks.students.prune): the base
model as it is, or the L0 model pruned; both without optimizer state and with a fresh training clock.

``<lam>`` is lambda with "p" for the decimal point (0.05 -> ``0p05``).
"""
from __future__ import annotations

import json
from typing import Dict, List, Tuple

from fastdec.layout import ResultsLayout
from fastdec.tracks.base import BenchRun, TableItem, section as validated_section
from fastdec.tracks.specs import Model

TRAIN_KEYS = ("max_update", "max_tokens", "update_freq", "lr", "warmup_updates", "dropout", "label_smoothing",
              "save_interval_updates")
NAME_REGEX = r"[a-z][a-z0-9_]*"


def lambda_tag(lam: float) -> str:
    text = f"{float(lam):g}"
    if "e" in text:
        raise ValueError(f"config students.pruning.lambdas: write {lam} as a plain decimal (e.g. 0.0001)")
    return text.replace(".", "p")


# flags whose values a warm-started student must share with the verifier (fastdec.tracks.students.warm_start checks the built
# models again)
SHARED_WITH_VERIFIER = ("encoder-embed-dim", "decoder-embed-dim", "encoder-normalize-before",
                         "decoder-normalize-before", "share-all-embeddings")


def check_config(st: dict, config: dict = None) -> None:
    """Cross-key checks the schema cannot express (clear ValueError naming the key); ``config`` is the whole config
    (the data and verifier sections some students settings depend on)."""
    config = config or {}
    download = (config.get("data") or {}).get("download") or {}
    if (st.get("decode") or {}).get("split") == "final" and "final_test" not in download:
        raise ValueError("config students.decode.split: final decodes data.download.final_test, which this config "
                         "does not have (data.source: download with a final_test archive member; or split: test)")
    verifier = (config.get("train") or {}).get("verifier")
    if st.get("init_from") == "verifier" and verifier:
        mine, theirs = st["train"].get("extra_args") or {}, verifier.get("extra_args") or {}
        for flag in SHARED_WITH_VERIFIER:
            a, b = mine.get(flag, False), theirs.get(flag, False)
            if a != b:
                raise ValueError(f"config students.init_from: verifier needs students.train.extra_args.{flag} equal "
                                 f"to train.verifier.extra_args.{flag} ({a!r} != {b!r})")
    models = st["models"]
    if st["baseline"] not in models:
        raise ValueError(f"config students.baseline {st['baseline']!r} is not a key of students.models "
                         f"({', '.join(models)})")
    if models[st["baseline"]]["self_attn"] != "attention":
        raise ValueError("config students.baseline must name a standard-attention student (self_attn: attention)")
    for name, m in models.items():
        if not m.get("ffn", True) and m["self_attn"] == "attention":
            raise ValueError(f"config students.models.{name}: ffn: false needs self_attn ssru or aan")
    pr = st.get("pruning")
    if pr:
        for base in pruning_bases(st):
            if base not in models:
                raise ValueError(f"config students.pruning.base {base!r} is not a key of students.models")
        for lam in pr["lambdas"]:
            if lam < 0:
                raise ValueError(f"config students.pruning.lambdas: lambda must be >= 0, got {lam}")
            lambda_tag(lam)


def pruning_bases(st: dict) -> List[str]:
    """The students ``students.pruning.base`` names (one name or a list: Table 2 prunes a standard-attention and an
    SSRU student)."""
    pr = st.get("pruning")
    if not pr:
        return []
    return [pr["base"]] if isinstance(pr["base"], str) else list(pr["base"])


def _pruned(st: dict) -> List[Tuple[str, str, str, float]]:
    lambdas = (st.get("pruning") or {}).get("lambdas", [])
    return [(b, f"{b}_l0_{lambda_tag(l)}", f"{b}_pruned_{lambda_tag(l)}", l) for b in pruning_bases(st) for l in lambdas]


def pruned_names(st: dict) -> List[Tuple[str, str, float]]:
    """(L0-phase model, fine-tuned pruned model, lambda) of every pruning base and lambda."""
    return [(l0, ft, lam) for _, l0, ft, lam in _pruned(st)]


def pruning_base(st: dict, name: str) -> str:
    """The student an L0-phase or pruned model was pruned from."""
    for base, l0, ft, _ in _pruned(st):
        if name in (l0, ft):
            return base
    raise ValueError(f"{name!r} is no L0 or pruned model of students.pruning")


def model_names(st: dict) -> List[str]:
    return list(st["models"]) + [n for l0, ft, _ in pruned_names(st) for n in (l0, ft)]


def structure(st: dict, name: str) -> dict:
    """The ``students.models`` entry a model (or its pruning base) has."""
    if name in st["models"]:
        return st["models"][name]
    return st["models"][pruning_base(st, name)]


def _spec(st: dict, name: str, phase: dict = None, extra: dict = None) -> dict:
    t, m = st["train"], structure(st, name)
    flags = {**t["extra_args"], "encoder-layers": m["encoder_layers"], "decoder-layers": m["decoder_layers"],
             "decoder-self-attn": m["self_attn"], "decoder-no-ffn": not m.get("ffn", True), **(extra or {})}
    spec = {"arch": t["arch"], **{k: t[k] for k in TRAIN_KEYS}, "extra_args": flags}
    minutes = t.get("max_minutes")
    if phase:
        spec["max_update"] = phase["max_update"]
        spec["lr"] = phase.get("lr") or spec["lr"]
        if phase.get("warmup_updates") is not None:
            spec["warmup_updates"] = phase["warmup_updates"]
        minutes = phase.get("max_minutes")
    if minutes:
        spec["max_minutes"] = minutes
    return spec


def student_spec(st: dict, name: str) -> str:
    """The training spec (JSON) of a ``students.models`` entry without its start checkpoint: what
    fastdec.tracks.students.warm_start builds the untrained student from."""
    return json.dumps(_spec(st, name))


def warm_started(st: dict) -> List[str]:
    """The students.models that start from the verifier's weights (``init_from: verifier``)."""
    return list(st["models"]) if st.get("init_from", "none") == "verifier" else []


def init_source(st: dict, name: str, R: str) -> Tuple[str, bool]:
    """(checkpoint, prune it) that ``students/init/<name>.pt`` is written from (an L0 or fine-tuning phase)."""
    L = ResultsLayout(R)
    for base, l0, ft, _ in _pruned(st):
        if name == l0:
            return L.model(base, "students/"), False
        if name == ft:
            return L.model(l0, "students/"), True
    raise ValueError(f"students/init/{name}.pt: {name!r} is no L0 or pruned model of students.pruning")


def init_checkpoint(R: str, name: str) -> str:
    """``students/init/<name>.pt``: where a student's start checkpoint is written (rules.smk)."""
    return ResultsLayout(R).path("students", "init", f"{name}.pt")


def model_setup(st: dict, name: str, R: str, plugin: str) -> Tuple[dict, Dict[str, str], str]:
    """(train spec, extra inputs, `fastdec train` flags) of one student model."""
    for l0, ft, lam in pruned_names(st):
        pr = st["pruning"]
        init = init_checkpoint(R, name)
        if name == l0:
            extra = {"head-gates": True, "l0-lambda": lam, "head-gate-scale": pr["gate_scale"],
                     "label-smoothing": st["train"]["label_smoothing"], "finetune-from-model": init}
            return (_spec(st, name, pr["l0"], extra), {"init": init},
                    f"--criterion l0_head_cross_entropy --user-dir {plugin}")
        if name == ft:
            extra = {"finetune-from-model": init, "heads-from": init}
            return _spec(st, name, pr["finetune"], extra), {"init": init}, f"--user-dir {plugin}"
    if name not in st["models"]:
        raise ValueError(f"no student {name!r}: students.models has {', '.join(st['models'])}")
    if name in warm_started(st):
        init = init_checkpoint(R, name)
        return _spec(st, name, extra={"finetune-from-model": init}), {"init": init}, f"--user-dir {plugin}"
    return _spec(st, name), {}, f"--user-dir {plugin}"


MODEL_NAMES = NAME_REGEX


def check(config: dict) -> None:
    check_config(config["students"], config)


def model(config: dict, R: str, name: str, plugin: str) -> Model:
    """``students/models/<name>``: a student on the Seq-KD data, or one phase of its pruning."""
    st = config["students"]
    if name not in model_names(st):
        raise ValueError(f"no model students/models/{name}: the students track trains {', '.join(model_names(st))}")
    L = ResultsLayout(R)
    data = L.data_bin(st["data"])
    spec, inputs, flags = model_setup(st, name, R, plugin)
    src = config.get("data", {}).get("src_lang", "src")
    return Model(json.dumps(spec), data, {"data": f"{data}/dict.{src}.txt", **inputs}, st["train"], flags)

_TABLES = "students/tables"


def section(config: dict) -> dict:
    st = validated_section(config, "students")
    check_config(st, config)
    return st


def decoded_models(st: dict) -> Dict[str, dict]:
    """Model name -> its structure plus ``pruned`` (the benchmarked students)."""
    out = {n: {**m, "ffn": m.get("ffn", True), "pruned": False} for n, m in st["models"].items()}
    for _, ft, _ in pruned_names(st):
        m = structure(st, ft)
        out[ft] = {**m, "ffn": m.get("ffn", True), "pruned": True}
    return out


def gad_method(config: dict, st: dict, R: str):
    k = st["decode"]["gad_k"]
    if not (k and config["tracks"].get("gad")):
        return None, None
    drafter = ResultsLayout(R).model(f"drafter_k{k}", "gad/")
    return f"gad:k={k}:checkpoint={drafter}", drafter


def methods(config: dict, st: dict, R: str) -> List[str]:
    dec = st["decode"]
    out = ["fairseq:beam=1", "greedy", f"fairseq:beam={dec['beam']}",
           f"fairseq:beam={dec['beam']}:batch={dec['batch_size']}"]
    gad, _ = gad_method(config, st, R)
    return out + ([gad] if gad else [])


def run_dir(name: str, split: str = "test") -> str:
    return f"students/bench/{split}/{name}"


def gpu_run_dir(name: str, split: str = "test") -> str:
    """The GPU run of a student (``students.decode.gpu``): the paper's GPU columns."""
    return f"students/bench_gpu/{split}/{name}"


def gpu_method(st: dict) -> str:
    """Beam search at the GPU batch size (the paper: beam 5, batch 128 on one V100)."""
    return f"fairseq:beam={st['decode']['beam']}:batch={st['decode']['gpu']['batch_size']}"


def bench_runs(config: dict, R: str) -> Dict[str, BenchRun]:
    st = section(config)
    dec, data = st["decode"], config.get("data", {})
    src, tgt = data.get("src_lang", "src"), data.get("tgt_lang", "tgt")
    split = dec["split"]
    _, drafter = gad_method(config, st, R)
    L = ResultsLayout(R)
    runs = {run_dir(name, split): BenchRun(
        "students", checkpoint=L.model(name, "students/"), dictionary=L.dictionary(src, st["data"]),
        src=L.bpe(split, src), methods=methods(config, st, R), ref=L.raw(split, tgt), lang=tgt,
        drafters=[drafter] if drafter else [],
        limit=dec["sentences"], warmup=dec["warmup"], threads=dec["threads"], exclusive=dec["exclusive"],
        # no GPU asked for: the paper's CPU batch-1 setting, on the CPU even in a CUDA config
        device=config.get("device", "cpu") if dec["gpus"] else "cpu",
        max_len_a=config["decode"]["max_len_a"], max_len_b=config["decode"]["max_len_b"], mem_mb=dec["mem_mb"],
        runtime=dec["runtime"], gpus=dec["gpus"]) for name in decoded_models(st)}
    gpu = dec.get("gpu")
    if gpu:
        runs.update({gpu_run_dir(name, split): BenchRun(
            "students", checkpoint=L.model(name, "students/"), dictionary=L.dictionary(src, st["data"]),
            src=L.bpe(split, src), methods=[gpu_method(st)], ref=L.raw(split, tgt), lang=tgt,
            limit=gpu["sentences"], warmup=dec["warmup"], threads=gpu["threads"], exclusive=dec["exclusive"],
            device="cuda",
            max_len_a=config["decode"]["max_len_a"], max_len_b=config["decode"]["max_len_b"], mem_mb=gpu["mem_mb"],
            runtime=gpu["runtime"], gpus=gpu["gpus"]) for name in decoded_models(st)})
    return runs


def table_items(config: dict, R: str) -> Dict[str, TableItem]:
    st = section(config)
    runs = decoded_models(st)
    L = ResultsLayout(R)
    split = st["decode"]["split"]
    gpu = [L.run(f"{gpu_run_dir(n, split)}/summary.csv") for n in runs] if st["decode"].get("gpu") else []
    inputs = [L.run(f"{run_dir(n, split)}/summary.csv") for n in runs] + gpu + [L.model(n, "students/") for n in runs]
    items = {"students_table1.csv": inputs, "students_figure2.csv": inputs, "students_figure2.png": inputs,
             "students_table3.csv": inputs}
    if st.get("pruning"):
        items["students_table2.csv"] = inputs
    if gad_method(config, st, R)[0]:
        items["students_gad_verifier.csv"] = inputs
    return {f"{_TABLES}/{p}": TableItem("students", p.rsplit(".", 1)[0], i) for p, i in items.items()}
