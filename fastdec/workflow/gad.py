"""What the GAD track trains: the drafter's paths and training spec (workflow/rules/gad.smk, and the
training rule through fastdec.workflow.models). Free of heavy imports, so the Snakefile can import it at parse time.
"""
from __future__ import annotations

import json
from typing import Dict, Optional


# fairseq transformer architectures -> the nat_block_drafter architecture with the same sizes
DRAFTER_ARCH = {
    "transformer": "nat_block_drafter",
    "transformer_wmt_en_de": "nat_block_drafter",
    "transformer_wmt_en_de_big": "nat_block_drafter_big",
    "transformer_vaswani_wmt_en_de_big": "nat_block_drafter_big",
    "bart_base": "nat_block_drafter_bart_base",  # BART's architecture flags come with the arch (CNN-DM track)
    "bart_large": "nat_block_drafter_bart_large",
}


CHEAP = "_cheap"  # name suffix of the cheap_drafter: gad/models/drafter_k<K>_cheap
# measured 2026-11-25 (200 valid sentences, k=10): reading the first token at the prefix took GAD from 1.41 to 2.00
# tokens per iteration and from 16.7 to 12.0 ms per sentence (docs/PERFORMANCE.md)
CHEAP_DRAFTER = {"attention": "prefix-causal", "freeze_encoder": True, "first_from_prefix": True}


class GadPlan:
    """The drafter of the GAD track for one validated ``config["gad"]`` section (its benchmark runs and tables:
    fastdec.tracks.gad).

    ``results`` is ``results/<experiment>``.
    """

    def __init__(self, gad: dict, results: str, src: str, tgt: str, verifier_spec: Optional[dict] = None):
        self.c = gad
        self.verifier_spec = verifier_spec or {}
        self.R = results
        self.G = f"{results}/gad"
        self.k = int(gad["block_size"])
        self.src, self.tgt = src, tgt
        self.data = f"{results}/data-bin/distill"

    def train_inputs(self) -> Dict[str, str]:
        inputs = {"data": f"{self.data}/dict.{self.src}.txt"}
        mode = self.c.get("init_from_verifier", "all")
        if mode == "all":
            inputs["init"] = f"{self.G}/models/init_from_verifier.pt"
        elif mode == "encoder":
            inputs["verifier"] = f"{self.R}/models/verifier/model.pt"
        return inputs

    def train_spec(self, k, init: Optional[str] = None, verifier: Optional[str] = None) -> str:
        """fairseq-train spec (JSON, for scripts/train.py) of the drafter ``drafter_k<k>``; ``k`` = ``"10_cheap"``
        is the ``cheap_drafter`` of block size 10."""
        k, cheap = (str(k)[: -len(CHEAP)], True) if str(k).endswith(CHEAP) else (k, False)
        variant = CHEAP_DRAFTER if cheap else self.c
        spec = json.loads(json.dumps(self.c["train"]))
        extra = dict(spec.get("extra_args") or {})
        if spec["arch"] == "from_verifier":
            # the verifier's architecture: its arch mapped to the drafter's, its flags as defaults
            varch = self.verifier_spec.get("arch")
            if varch not in DRAFTER_ARCH:
                raise ValueError(f"gad.train.arch: from_verifier needs a verifier arch in {sorted(DRAFTER_ARCH)}, "
                                 f"got {varch!r}; name the drafter's arch and sizes explicitly instead")
            spec["arch"] = DRAFTER_ARCH[varch]
            extra = {**(self.verifier_spec.get("extra_args") or {}), **extra}
        extra["block-size"] = int(k)
        if variant.get("freeze_encoder") and self.c.get("init_from_verifier", "all") == "none":
            raise ValueError("gad: freeze_encoder keeps the verifier's encoder the drafter starts from; it needs "
                             "init_from_verifier: all or encoder (got none)")
        extra["drafter-attention"] = variant.get("attention", "bidirectional")
        extra["freeze-encoder"] = bool(variant.get("freeze_encoder", False))
        if variant.get("first_from_prefix"):  # only when set: other drafters keep their specs (and checkpoints)
            extra["first-from-prefix"] = True
        extra.setdefault("label-smoothing", spec.get("label_smoothing", 0.1))
        g = self.c.get("glancing") or {}
        extra.setdefault("glance-start", g.get("start", 0.5))
        extra.setdefault("glance-end", g.get("end", 0.3))
        extra.setdefault("glance-anneal-updates", g.get("anneal_updates", 300000))
        if init:
            extra["finetune-from-model"] = init
        if verifier:
            extra["init-encoder-from"] = verifier
        spec["extra_args"] = extra
        return json.dumps(spec)
