"""The MT chain every translation track builds on (workflow/rules/data.smk, distill.smk, decode.smk, evaluate.smk):
the corpus and its BPE, the teacher, Seq-KD, the w/o-Seq-KD baseline and the verifier.

=============  ==============================  ===========================================================
model          trained on                      from
=============  ==============================  ===========================================================
teacher        data-bin/raw                    scratch (or BART: init_from_bart)
teacher2, ...  data-bin/raw                    the other teachers of a Seq-KD ensemble (distill.teachers; seeds 2, 3 ..)
baseline       data-bin/raw                    scratch, or the teacher (init_from)
verifier       data-bin/distill (Seq-KD)       scratch, or the teacher (init_from)
=============  ==============================  ===========================================================
"""
from __future__ import annotations

import json
from typing import Dict, List

from fastdec.layout import ResultsLayout

from .specs import Dataset, Model, architecture, bart_init, starting_from

MODEL_NAMES = r"teacher\d*|baseline|verifier"
# the data-bin each AT model trains on: the teacher and the no-KD baseline see the original data, the verifier Seq-KD
AT_DATA = {"teacher": "raw", "baseline": "raw", "verifier": "distill"}


def at_systems(beam: int) -> Dict[str, tuple]:
    """Rows of tables/table1_at.csv, decoded by the MT chain: name -> (model, beam); ``beam`` is config decode.beam."""
    return {"teacher_b5": ("teacher", beam), "baseline_b5": ("baseline", beam), "verifier_b5": ("verifier", beam),
            "verifier_b1": ("verifier", 1)}


def languages(config: dict) -> tuple:
    data = config.get("data", {})
    return data.get("src_lang", "src"), data.get("tgt_lang", "tgt")


def teachers(config: dict, layout: ResultsLayout) -> List[str]:
    """The teacher and the other members of a Seq-KD ensemble (distill.teachers)."""
    n = config.get("distill", {}).get("teachers", 1)
    return [layout.model("teacher")] + [layout.model(f"teacher{k}") for k in range(2, n + 1)]


def check_init_from(train: dict) -> None:
    """``train.<model>.init_from``: only the baseline and the verifier start from another model (the teacher),
    and only with its architecture (fairseq would stop at the first mismatched tensor, after the teacher trained)."""
    for name, spec in train.items():
        source = spec.get("init_from") if isinstance(spec, dict) else None
        if source is None:
            continue
        if name not in ("baseline", "verifier"):
            raise ValueError(f"config: train.{name}.init_from: only train.baseline and train.verifier may start "
                             f"from the teacher; remove the key")
        if architecture(spec) != architecture(train[source]):
            raise ValueError(f"config: train.{name}.init_from: {source} needs the same architecture as "
                             f"train.{source} (arch and the size flags of extra_args): {architecture(spec)} vs "
                             f"{architecture(train[source])}")


def model(config: dict, layout: ResultsLayout, name: str) -> Model:
    """The training rule's view of one model of the chain (see the module docstring)."""
    if name.startswith("teacher") and name != "teacher":  # an ensemble member: the teacher, another seed
        n = int(name[len("teacher"):])
        if not 2 <= n <= config["distill"]["teachers"]:
            raise ValueError(f"no model models/{name}: distill.teachers is {config['distill']['teachers']}")
        spec, data = {**config["train"]["teacher"], "seed": n}, layout.data_bin(AT_DATA["teacher"])
    else:
        spec, data = config["train"][name], layout.data_bin(AT_DATA[name])
    inputs = {"data": f"{data}/dict.{languages(config)[0]}.txt"}
    spec = bart_init(layout, "", name, spec, inputs)
    if spec.get("init_from"):  # continue the teacher (check_init_from)
        spec = starting_from(spec, inputs, layout.model(spec["init_from"]))
    return Model(json.dumps(spec), data, inputs, spec, priority=50 if name.startswith("teacher") else 0)


def datasets(config: dict, layout: ResultsLayout) -> List[Dataset]:
    """The chain's corpus: GPT-2 BPE reads the untokenised text (data/raw), subword-nmt the Moses tokens."""
    src, tgt = languages(config)
    text = layout.path("data", "raw" if config["bpe"].get("kind") == "gpt2" else "tok")
    return [Dataset("", text, "data-bin/raw", src, tgt, config["bpe"], ("train", "valid", "test", "latency"))]


def downloads(config: dict) -> Dict[str, dict]:
    data = config.get("data", {})
    return {"downloads": data["download"]["archives"]} if data.get("source") == "download" else {}


def bart_inits(config: dict) -> dict:
    """(track, model) -> init_from_bart of the chain's models that start from BART."""
    return {("", n): s["init_from_bart"] for n, s in config["train"].items() if s.get("init_from_bart")}
