"""What the BART-initialised models need (CNN-DM, config/cnndm.yaml; the 12+2 GEC model, config/gec_bart.yaml): the
public fairseq releases to fetch (``bart:`` section -> results/bart_downloads/), which models start from which BART
checkpoint and decoder layers (``init_from_bart`` of a train spec -> ``<model dir>/bart_init.pt``, rule bart_init),
and the GPT-2 BPE files of ``bpe.kind: gpt2`` datasets.
"""
from __future__ import annotations

from typing import Dict, Tuple

from fastdec.layout import ResultsLayout

STORE = "bart_downloads"
GPT2_FILES = ("encoder.json", "vocab.bpe", "dict.txt")


def archive_name(checkpoint: str) -> str:
    """The fetched archive of a ``bart.checkpoints`` name (``bart.base`` -> ``bart.base.tar.gz``)."""
    return f"{checkpoint}.tar.gz"


def config_key(track: str, name: str) -> str:
    """The config key of a model's train spec: ``train.<name>`` (MT chain) or ``gec.model``."""
    return "gec.model" if track == "gec/" else f"train.{name}"


class BartPlan:
    """``inits``: (track, model name) -> its ``init_from_bart``; ``gpt2``: whether some dataset uses GPT-2 BPE."""

    def __init__(self, config: dict, R: str, inits: Dict[Tuple[str, str], dict], gpt2: bool):
        self.R, self.inits, self.gpt2 = R, inits, gpt2
        self.c = config.get("bart")
        if not (inits or gpt2):
            return
        users = [f"{config_key(t, n)}.init_from_bart" for t, n in inits] + (["bpe.kind: gpt2"] if gpt2 else [])
        if not self.c:
            raise ValueError(f"config: {', '.join(users)} need a `bart:` section (the BART release archives under "
                             "bart.checkpoints and the GPT-2 BPE files under bart.gpt2; see config/cnndm.yaml)")
        for (track, name), init in inits.items():
            if init["checkpoint"] not in self.c["checkpoints"]:
                raise ValueError(f"config {config_key(track, name)}.init_from_bart.checkpoint: "
                                 f"{init['checkpoint']!r} is not a name under bart.checkpoints "
                                 f"({', '.join(self.c['checkpoints'])})")

    @property
    def used(self) -> bool:
        return bool(self.inits or self.gpt2)

    def downloads(self) -> Dict[str, dict]:
        """archive name -> {url, sha256} of what the config uses (the fetch rule's ``bart_downloads`` store)."""
        if not self.used:
            return {}
        out = {f: self.c["gpt2"][f] for f in GPT2_FILES}
        for init in self.inits.values():
            out[archive_name(init["checkpoint"])] = self.c["checkpoints"][init["checkpoint"]]
        return out

    @staticmethod
    def file(name: str) -> str:
        return f"results/{STORE}/{name}"

    def init_path(self, track: str, name: str) -> str:
        return ResultsLayout(self.R).bart_init(track, name)

    # ------------------------------------------------------------------ the bart_init rule
    def _init(self, wildcards) -> dict:
        return self.inits[(wildcards.track, wildcards.name)]

    def init_archive(self, wildcards) -> str:
        return self.file(archive_name(self._init(wildcards)["checkpoint"]))

    def init_member(self, wildcards) -> str:
        """The checkpoint inside the release archive (bart.base.tar.gz holds bart.base/model.pt)."""
        return f"{self._init(wildcards)['checkpoint']}/model.pt"

    def init_layers_arg(self, wildcards) -> str:
        keep = self._init(wildcards).get("decoder_layers")
        return f"--decoder-layers {','.join(str(int(i)) for i in keep)}" if keep else ""

    def init_constraints(self) -> dict:
        from fastdec.tracks.specs import alternatives

        return {"track": alternatives(t for t, _ in self.inits), "name": alternatives(n for _, n in self.inits)}
