"""Where everything lives under ``results/<experiment>/``: one object owns the paths, so the rules, the tracks' plans
and the table commands name the same file the same way.

::

    results/<experiment>/
      data/{raw,tok,bpe}/<split>.<lang>     the MT chain's corpus       data-bin/{raw,distill}/   its data-bins
      [<track>/]models/<name>/model.pt      every trained model (track "" = the MT chain, "gec/", "gad/", ...)
      eval/<system>.json                    the MT chain's fairseq-generate scores
      <track>/bench/<run>/                  a ``fastdec bench`` run (summary.csv, sentences.jsonl, meta.json)
      <track>/tables/<name>.csv             a table; <track>/figures/<name>.png a figure ("" : tables/ at the top)
      logs/<name>.log, benchmarks/<name>.tsv, report/report.md
"""
from __future__ import annotations

import os

__all__ = ["ResultsLayout"]


class ResultsLayout:
    """The paths under ``root`` = ``results/<experiment>`` (relative to the workflow's working directory)."""

    def __init__(self, root: str):
        self.root = root.rstrip("/")

    @classmethod
    def of(cls, config: dict) -> "ResultsLayout":
        return cls(f"results/{config['experiment']}")

    def __str__(self) -> str:
        return self.root

    def path(self, *parts: str) -> str:
        """``root/part/...``: a path given relative to the experiment's folder."""
        return "/".join([self.root, *parts])

    def relative(self, path: str) -> str:
        return os.path.relpath(path, self.root)

    # ------------------------------------------------------------------ models: [<track>]models/<name>/
    def model_dir(self, name: str, track: str = "") -> str:
        """``track``: "" (the MT chain) or a track's prefix with its slash ("gad/"), as the training rule's wildcard."""
        return f"{self.root}/{track}models/{name}"

    def model(self, name: str, track: str = "") -> str:
        return f"{self.model_dir(name, track)}/model.pt"

    def train_summary(self, name: str, track: str = "") -> str:
        """What the training job reports (updates, time, resumed), beside the model."""
        return f"{self.model_dir(name, track)}/train.json"

    def checkpoints(self, name: str, track: str = "") -> str:
        """fairseq's checkpoints of a model (a killed training resumes from checkpoint_last.pt here)."""
        return f"{self.model_dir(name, track)}/checkpoints"

    def ct2(self, name: str, track: str = "") -> str:
        """The checkpoint converted for CTranslate2 (rule ct2_convert)."""
        return f"{self.model_dir(name, track)}/ct2"

    def bart_init(self, track: str, name: str) -> str:
        """The BART weights a model starts from (rule bart_init)."""
        return f"{self.model_dir(name, track)}/bart_init.pt"

    # ------------------------------------------------------------------ the MT chain's data
    def data_bin(self, name: str = "raw") -> str:
        return f"{self.root}/data-bin/{name}"

    def dictionary(self, lang: str, data_bin: str = "raw") -> str:
        return f"{self.data_bin(data_bin)}/dict.{lang}.txt"

    def data(self, stage: str, split: str, lang: str) -> str:
        """``data/<stage>/<split>.<lang>``: stage raw (detokenised text), tok or bpe."""
        return f"{self.root}/data/{stage}/{split}.{lang}"

    def bpe(self, split: str, lang: str) -> str:
        return self.data("bpe", split, lang)

    def raw(self, split: str, lang: str) -> str:
        return self.data("raw", split, lang)

    def eval(self, system: str) -> str:
        return f"{self.root}/eval/{system}.json"

    # ------------------------------------------------------------------ tracks: runs, tables, figures
    def track(self, track: str) -> str:
        return f"{self.root}/{track}"

    def run(self, run: str) -> str:
        """A benchmark run, named relative to the experiment (``gad/bench/test``)."""
        return f"{self.root}/{run}"

    def table(self, track: str, name: str) -> str:
        return f"{self.root}/{track + '/' if track else ''}tables/{name}.csv"

    def figure(self, track: str, name: str) -> str:
        return f"{self.root}/{track + '/' if track else ''}figures/{name}.png"

    # ------------------------------------------------------------------ bookkeeping
    def log(self, name: str) -> str:
        return f"{self.root}/logs/{name}.log"

    def benchmark(self, name: str) -> str:
        return f"{self.root}/benchmarks/{name}.tsv"

    def report(self, name: str) -> str:
        return f"{self.root}/report/{name}"
