"""What every track's plan is made of: benchmark runs, table items, the method lists they share, and the track's
config section validated against its schema (fastdec/tracks/<name>/schema.yaml).

A track's plan (``fastdec.tracks.<name>.plan``, listed in fastdec.tracks.registry) defines

* ``bench_runs(config, R) -> {run_dir: BenchRun}``  the benchmark runs it needs (one ``fastdec bench`` job each);
* ``table_items(config, R) -> {path: TableItem}``   every table/figure it writes, with the files each one reads;
* and its ``outputs.make_table(name, config, R, output)`` writes one of them (``fastdec tables TRACK NAME``).

The Snakefile has one ``bench`` rule and one ``table`` rule over the union of these (workflow/rules/experiments.smk),
and the table command finds its inputs through the same functions, so the paths live in one place. A track that
trains models adds ``MODEL_NAMES`` and ``model(config, R, name, plugin)`` (the ONE training rule), and optionally
``check(config)``, ``datasets``, ``downloads`` and ``bart_inits`` (fastdec.workflow.plan collects them).
"""
from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional

__all__ = ["BenchRun", "TableItem", "section", "schema_path", "ct2_methods", "ct2_conversions", "backend_methods",
           "policy_methods", "policy_item", "write_policy_item", "with_key"]

TRACKS_DIR = os.path.dirname(os.path.abspath(__file__))


@dataclass
class BenchRun:
    """One ``fastdec bench`` job: inputs (paths), the methods, and how to run it."""

    track: str
    checkpoint: str
    dictionary: str                     # dict.<lang>.txt inside the data-bin (its folder is --data-bin)
    src: str
    methods: List[str]
    ref: Optional[str] = None
    lang: Optional[str] = None
    drafters: List[str] = field(default_factory=list)   # drafter checkpoints the methods name (inputs only)
    ct2_model: Optional[str] = None     # the checkpoint converted for the ct2 methods (rule ct2_convert)
    langs: Optional[tuple] = None       # (source, target) language of the data-bin's dictionaries
    limit: Optional[int] = None
    warmup: int = 2
    repeats: int = 1
    threads: int = 1
    exclusive: bool = False             # claim every core Snakemake has, so nothing runs beside the timing
    device: str = "cpu"
    dtype: str = "float32"              # the workflow's dtype (set for every run by bench_runs)
    max_len_a: float = 0.0
    max_len_b: int = 200
    mem_mb: int = 4000
    runtime: int = 120
    gpus: int = 0

    def inputs(self) -> Dict[str, object]:
        d = {"checkpoint": self.checkpoint, "dictionary": self.dictionary, "src": self.src, "drafters": self.drafters}
        if self.ct2_model:
            d["ct2"] = f"{self.ct2_model}/model.bin"
        if self.ref:
            d["ref"] = self.ref
        return d


def with_key(spec: str, key: str, value: str) -> str:
    """``spec`` with ``key=value`` added; a spec with its own ``label`` gets ``-value`` on that label too (two rows
    must not share a name)."""
    from fastdec.bench.methods import parse_method

    m = parse_method(spec)
    if m.custom_label:
        spec = spec.replace(f":label={m.custom_label}", f":label={m.custom_label}-{value}")
    return f"{spec}:{key}={value}"


def backend_methods(backends, specs, device: str = "cpu") -> List[str]:
    """The engine methods ``specs`` again on each extra verifier backend (``iad`` -> ``iad:backend=fast``); none on
    a GPU (the fast backends are CPU passes)."""
    return [with_key(s, "backend", b) for b in backends if b != "torch" and device == "cpu" for s in specs]


def policy_methods(policies, specs) -> List[str]:
    """The drafting methods among ``specs`` again with each draft-length policy other than the papers' fixed k
    (``iad`` -> ``iad:policy=cost``; beyond the papers, fastdec.engine.policy)."""
    from fastdec.bench.methods import parse_method

    return [with_key(s, "policy", p) for p in policies if p != "fixed" for s in specs
            if parse_method(s).drafter and parse_method(s).kind == "engine" and parse_method(s).min_block == 1]


def policy_item(track: str, runs: Dict[str, List[str]], R: str) -> Dict[str, "TableItem"]:
    """The track's table of cost-aware draft lengths (``<track>/tables/<track>_policy.csv``,
    :mod:`fastdec.bench.policy_table`) over those of its ``runs`` (run folder -> method specs) that have a
    ``policy=cost`` method; none without."""
    from fastdec.bench.methods import parse_method
    from fastdec.layout import ResultsLayout

    L = ResultsLayout(R)
    with_cost = [run for run, specs in runs.items()
                 if any(m.kind == "engine" and m.policy == "cost" for m in map(parse_method, specs))]
    if not with_cost:
        return {}
    inputs = [L.run(f"{run}/{f}") for run in with_cost for f in ("summary.csv", "sentences.jsonl")]
    return {f"{track}/tables/{track}_policy.csv": TableItem(track, f"{track}_policy", inputs)}


def write_policy_item(items: Dict[str, "TableItem"], track: str, output: str) -> None:
    """Write :func:`policy_item`'s table (``items``: the track's table items): each run named by its folder below
    ``<track>/bench/``."""
    from fastdec.bench.policy_table import write_policy_table

    item = next(i for i in items.values() if i.name == f"{track}_policy")
    runs = [os.path.dirname(p) for p in item.inputs if p.endswith("summary.csv")]
    write_policy_table({run.replace(os.sep, "/").split(f"{item.track}/bench/", 1)[-1]: run for run in runs}, output)


def ct2_methods(compute_types, beam: int, model_dir: str) -> List[str]:
    """CTranslate2 rows (a peer engine): greedy and beam search for each compute type, on the converted folder."""
    return [f"ct2:beam={b}:compute={c}:model={model_dir}" for c in compute_types for b in (1, beam)]


def ct2_conversions(runs: Dict[str, BenchRun]) -> Dict[str, BenchRun]:
    """Converted folder -> a run that names it (its checkpoint, dictionary and languages: the ct2_convert rule)."""
    return {r.ct2_model: r for r in runs.values() if r.ct2_model}


@dataclass
class TableItem:
    """One table (CSV) or figure (PNG) of a track and the files it reads."""

    track: str
    name: str
    inputs: List[str]

    def caption_text(self, repo: str) -> str:
        """The caption of the report (workflow/report/<name>.rst), rendered into workflow/report/table.rst."""
        path = os.path.join(repo, "workflow", "report", f"{self.name}.rst")
        return open(path, encoding="utf-8").read() if os.path.isfile(path) else self.name


def schema_path(name: str) -> str:
    """The schema of the ``name:`` config section: fastdec/tracks/<name>/schema.yaml."""
    return os.path.join(TRACKS_DIR, name, "schema.yaml")


def section(config: dict, name: str) -> dict:
    """``config[name]`` validated against its schema (:func:`schema_path`), on a copy with its defaults filled in
    (the table command may get a config no Snakefile has validated)."""
    schema = schema_path(name)
    if name not in config:
        raise ValueError(f"config: the {name} track is on but there is no `{name}:` section (see "
                         f"{os.path.relpath(schema, os.path.dirname(os.path.dirname(TRACKS_DIR)))})")
    from snakemake.utils import validate

    out = copy.deepcopy(config[name])
    try:
        validate(out, schema)  # fills the defaults
    except Exception as e:  # noqa: BLE001  (snakemake's WorkflowError)
        raise ValueError(f"config {name}: {e}") from None
    return out
