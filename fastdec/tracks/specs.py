"""What a trained model and a dataset are to the workflow, for every track: the training rule's view of a model
(:class:`Model`), a corpus that gets BPE and a data-bin (:class:`Dataset`), and the helpers the tracks' training
specs share. Free of heavy imports: the Snakefile imports it at parse time.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict


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


# resources when a config section leaves them out (the schemas fill them in)
DEFAULTS = {"threads": 2, "mem_mb": 4000, "runtime": 60, "gpus": 0}


@dataclass(frozen=True)
class Model:
    """One model of the ONE training rule (workflow/rules/train.smk)."""

    spec: str                    # JSON for `fastdec train`
    data: str                    # data-bin folder
    inputs: Dict[str, str]       # "data" (the dictionary) plus checkpoints it starts from
    resources: dict              # the config section with threads, mem_mb, runtime, gpus
    flags: str = ""              # --task / --criterion / --user-dir of `fastdec train`
    priority: int = 0            # the teacher and the GEC model head long chains


def starting_from(spec: dict, inputs: dict, init: str) -> dict:
    """``spec`` continuing the checkpoint ``init`` (fairseq --finetune-from-model: fresh optimiser, schedule and data
    loader), which ``inputs`` gains as "init"."""
    inputs["init"] = init
    return {**spec, "extra_args": {**(spec.get("extra_args") or {}), "finetune-from-model": init}}


def bart_init(layout, track: str, name: str, spec: dict, inputs: dict) -> dict:
    """A spec with ``init_from_bart`` starts from ``<model dir>/bart_init.pt`` (rule bart_init)."""
    if not spec.get("init_from_bart"):
        return spec
    return starting_from(spec, inputs, layout.bart_init(track, name))


@dataclass(frozen=True)
class Dataset:
    """A parallel corpus that gets joint BPE and a fairseq data-bin with one joined dictionary."""

    key: str          # the {ds} wildcard: where under results/<experiment>/ its data/ lives ("" or "gec/")
    text: str         # folder of the text BPE is learnt on and applied to
    bin: str          # the {bin} wildcard: its data-bin folder under results/<experiment>/
    src: str
    tgt: str
    bpe: dict         # kind, merges, min_frequency, max_source_tokens
    splits: tuple     # binarised: train, valid, then fairseq's test, test1, ... (each a file pair in data/bpe)
    # another dataset's BPE codes ({ds}) and dictionary ({bin}) instead of its own: the GEC track's synthetic
    # pretraining pairs share the GEC model's vocabulary, so the GEC model can fine-tune from the pretrained one
    codes_from: str = ""
    dict_from: str = ""
    bin_runtime: int = 60  # minutes of its binarisation job

    @property
    def gpt2(self) -> bool:
        """BART's GPT-2 BPE on the untokenised text (rule gpt2_bpe, binarised with its dict.txt)."""
        return self.bpe.get("kind", "subword_nmt") == "gpt2"
