"""Every model the workflow trains, for the ONE training rule (workflow/rules/train.smk).

A model is named by two wildcards, ``track`` and ``name``; its files are
``results/<experiment>/<track>models/<name>/`` (``model.pt``, ``train.json``, ``checkpoints/``):

``track`` is "" for the MT chain (fastdec.tracks.chain: teacher, baseline, verifier, teacher2 ...) and ``<name>/`` for
every track of fastdec.tracks.registry whose plan trains models (``MODEL_NAMES``, ``model``): gec/, gad/,
blockwise/, students/.

What differs per model (inputs, the fairseq-train spec, task/criterion/--user-dir, threads and resources, priority)
comes from the track's ``model`` (:meth:`Models.get`); the rule only calls the accessors below.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Dict, List

from fastdec.tracks import chain, registry
from fastdec.tracks.specs import DEFAULTS, Model, alternatives


class Models:
    def __init__(self, plan):
        self.p = plan

    # ------------------------------------------------------------------ wildcards
    def _trainers(self) -> Dict[str, object]:
        """{track} wildcard -> the plan that trains its models (the MT chain's first)."""
        out = {"": chain} if self.p.mt_chain else {}
        out.update((t.models, t.plan) for t in registry.enabled(self.p.config) if hasattr(t.plan, "model"))
        return out

    def enabled_tracks(self) -> List[str]:
        return list(self._trainers())

    def track_regex(self) -> str:
        return alternatives(self.enabled_tracks())

    def name_regex(self) -> str:
        plans = self._trainers().values()
        return f"(?:{'|'.join(p.MODEL_NAMES for p in plans)})" if plans else "(?!)"

    # ------------------------------------------------------------------ per model
    @lru_cache(maxsize=None)
    def model(self, track: str, name: str) -> Model:
        plan = chain if track == "" else registry.track(track.rstrip("/")).plan
        if not re.fullmatch(plan.MODEL_NAMES, name):
            raise ValueError(f"no model {track}models/{name}: track {track or 'MT'!r} trains {plan.MODEL_NAMES}")
        if track == "":
            return chain.model(self.p.config, self.p.L, name)
        return plan.model(self.p.config, self.p.R, name, self.p.plugin)

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
