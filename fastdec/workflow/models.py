"""Every model the workflow trains, for the ONE training rule (workflow/rules/train.smk).

A model is named by two wildcards, ``track`` and ``name``; its files are
``results/<experiment>/<track>models/<name>/`` (``model.pt``, ``train.json``, ``checkpoints/``):

=============  ==============================  ===========================================================
track          name                            trained on / from
=============  ==============================  ===========================================================
"" (MT chain)  teacher, baseline, verifier     data-bin/raw (teacher, baseline), data-bin/distill (verifier);
               teacher2, teacher3, ...         the other teachers of a Seq-KD ensemble (distill.teachers; seeds 2, 3 ..)
gec/           gec                             gec/data-bin (with gec.pretrain: fine-tuned from gec_pretrain)
               gec_pretrain                    gec/pretrain/data-bin (synthetic pairs; gec.pretrain.enabled)
gad/           drafter_k<K>                    data-bin/distill, initialised from the verifier (gad.train)
blockwise/     <variant>_k<K>                  on top of the baseline or the verifier (blockwise.VARIANT_SETUP)
students/      <name>, <base>_l0|pruned_<lam>  data-bin/distill (Hsu et al. students, fastdec.workflow.students)
=============  ==============================  ===========================================================

What differs per model (inputs, the fairseq-train spec, task/criterion/--user-dir, threads and resources, priority)
comes from :meth:`Models.get`; the rule only calls the accessors below.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Dict

from fastdec.workflow import blockwise as bwf
from fastdec.workflow import students as stw


def alternatives(values) -> str:
    """A wildcard constraint matching exactly these values (none: matches nothing). Always a group, so that ""
    alone is a value too (Snakemake reads an empty constraint as none)."""
    values = list(dict.fromkeys(values))
    return f"(?:{'|'.join(re.escape(v) for v in values)})" if values else "(?!)"


SIZE_FLAGS = ("layers", "embed-dim", "ffn-embed-dim", "attention-heads", "normalize-before", "share-all-embeddings",
              "learned-pos")


def architecture(spec: dict) -> tuple:
    """A training spec's architecture: its arch and the size flags of its extra_args."""
    extra = spec.get("extra_args") or {}
    return spec["arch"], {k: v for k, v in extra.items() if k.replace("_", "-").endswith(SIZE_FLAGS)}


# model name patterns of each track (config switch, name regex)
TRACKS = {
    "": ("mt", r"teacher\d*|baseline|verifier"),
    "gec/": ("gec_iad", r"gec(?:_pretrain)?"),
    "gad/": ("gad", r"drafter_k\d+(?:_cheap)?"),
    "blockwise/": ("blockwise", r"(?:regular|distill|finetune|both)_k\d+"),
    "students/": ("students", stw.NAME_REGEX),
}
# resources when a config section leaves them out (the schemas fill them in)
DEFAULTS = {"threads": 2, "mem_mb": 4000, "runtime": 60, "gpus": 0}


@dataclass(frozen=True)
class Model:
    spec: str                    # JSON for scripts/train.py
    data: str                    # data-bin folder
    inputs: Dict[str, str]       # "data" (the dictionary) plus checkpoints it starts from
    resources: dict              # the config section with threads, mem_mb, runtime, gpus
    flags: str = ""              # --task / --criterion / --user-dir of scripts/train.py
    priority: int = 0            # the teacher and the GEC model head long chains


def _starting_from(spec: dict, inputs: dict, init: str) -> dict:
    """``spec`` continuing the checkpoint ``init`` (fairseq --finetune-from-model: fresh optimiser, schedule and data
    loader), which ``inputs`` gains as "init"."""
    inputs["init"] = init
    return {**spec, "extra_args": {**(spec.get("extra_args") or {}), "finetune-from-model": init}}


def _bart_init(plan, track: str, name: str, spec: dict, inputs: dict) -> dict:
    """A spec with ``init_from_bart`` starts from ``<model dir>/bart_init.pt`` (rule bart_init)."""
    if not spec.get("init_from_bart"):
        return spec
    return _starting_from(spec, inputs, plan.bart.init_path(track, name))


class Models:
    def __init__(self, plan):
        self.p = plan

    # ------------------------------------------------------------------ wildcards
    def enabled_tracks(self):
        on = {"mt": self.p.mt_chain, **self.p.tracks}
        return [t for t, (switch, _) in TRACKS.items() if on[switch]]

    def track_regex(self) -> str:
        return alternatives(self.enabled_tracks())

    def name_regex(self) -> str:
        tracks = self.enabled_tracks()
        return f"(?:{'|'.join(TRACKS[t][1] for t in tracks)})" if tracks else "(?!)"

    # ------------------------------------------------------------------ per model
    @lru_cache(maxsize=None)
    def model(self, track: str, name: str) -> Model:
        if not re.fullmatch(TRACKS[track][1], name):
            raise ValueError(f"no model {track}models/{name}: track {track or 'MT'!r} trains {TRACKS[track][1]}")
        p, R, src = self.p, self.p.R, self.p.src
        if track == "":
            if name.startswith("teacher") and name != "teacher":  # an ensemble member: the teacher, another seed
                n = int(name[len("teacher"):])
                if not 2 <= n <= p.config["distill"]["teachers"]:
                    raise ValueError(f"no model models/{name}: distill.teachers is {p.config['distill']['teachers']}")
                spec, data = {**p.config["train"]["teacher"], "seed": n}, p.at_data["teacher"]
            else:
                spec, data = p.config["train"][name], p.at_data[name]
            inputs = {"data": f"{data}/dict.{src}.txt"}
            spec = _bart_init(p, "", name, spec, inputs)
            if spec.get("init_from"):  # continue the teacher (plan.check_init_from)
                spec = _starting_from(spec, inputs, f"{R}/models/{spec['init_from']}/model.pt")
            return Model(json.dumps(spec), data, inputs, spec, priority=50 if name.startswith("teacher") else 0)
        if track == "gec/":
            return self._gec_model(name)
        if track == "gad/":
            inputs = p.gad.train_inputs()
            spec = p.gad.train_spec(name[len("drafter_k"):], inputs.get("init"), inputs.get("verifier"))
            return Model(spec, p.gad.data, inputs, p.config["gad"]["train"],
                         f"--task block_drafting --criterion glat_block_loss --user-dir {p.plugin}")
        if track == "students/":
            st = p.students
            if name not in stw.model_names(st):
                raise ValueError(f"no model students/models/{name}: the students track trains "
                                 f"{', '.join(stw.model_names(st))}")
            data = f"{R}/data-bin/{st['data']}"
            spec, inputs, flags = stw.model_setup(st, name, R, p.plugin)
            return Model(json.dumps(spec), data, {"data": f"{data}/dict.{src}.txt", **inputs}, st["train"], flags)
        variant, k = name.rsplit("_k", 1)
        base_model, data_name, _ = bwf.VARIANT_SETUP[variant]
        base, data = f"{R}/models/{base_model}/model.pt", f"{R}/data-bin/{data_name}"
        return Model(json.dumps(bwf.train_spec(p.bw, variant, k, base)), data,
                     {"base": base, "data": f"{data}/dict.{src}.txt"}, p.bw["train"],
                     f"--criterion blockwise_cross_entropy --user-dir {p.plugin}")

    def _gec_model(self, name: str) -> Model:
        """The GEC model, or with gec.pretrain the model pretrained on the synthetic pairs, which the GEC model then
        continues (fairseq --finetune-from-model, as the MT chain's init_from)."""
        g, pre = self.p.gec, self.p.gec.pretrain
        if name == "gec_pretrain":
            if not pre:
                raise ValueError("no model gec/models/gec_pretrain: gec.pretrain.enabled is false")
            data = f"{g.PT}/data-bin"
            return Model(json.dumps(pre["model"]), data, {"data": f"{data}/dict.src.txt"}, pre["model"], priority=40)
        spec, data = self.p.config["gec"]["model"], f"{g.G}/data-bin"
        inputs = {"data": f"{data}/dict.src.txt"}
        if pre and spec.get("init_from_bart"):
            raise ValueError("config gec.pretrain with gec.model.init_from_bart: the synthetic pretraining stage of a "
                             "BART-initialised model is not built; turn one of them off")
        if pre:
            spec = _starting_from(spec, inputs, f"{g.G}/models/gec_pretrain/model.pt")
        else:
            spec = _bart_init(self.p, "gec/", name, spec, inputs)
        return Model(json.dumps(spec), data, inputs, self.p.config["gec"]["model"], priority=40)

    def get(self, wildcards) -> Model:
        return self.model(wildcards.track, wildcards.name)

    # ------------------------------------------------------------------ accessors for the rule
    def inputs(self, wildcards) -> Dict[str, str]:
        return self.get(wildcards).inputs

    def spec(self, wildcards) -> str:
        spec = self.get(wildcards).spec
        if "'" in spec:
            raise ValueError(f"the training config of {wildcards.track}models/{wildcards.name} must not contain "
                             f"single quotes (it is passed to the shell quoted)")
        return spec

    def data(self, wildcards) -> str:
        return self.get(wildcards).data

    def flags(self, wildcards) -> str:
        return self.get(wildcards).flags

    def priority(self, wildcards) -> int:
        return self.get(wildcards).priority

    def threads(self, wildcards) -> int:
        return self.get(wildcards).resources.get("threads", DEFAULTS["threads"])

    def resource(self, key: str):
        """A function of the wildcards giving the model's ``key`` (mem_mb, runtime, gpus)."""
        return lambda wildcards: self.get(wildcards).resources.get(key, DEFAULTS[key])
