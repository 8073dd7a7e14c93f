"""The tracks, in one list. Everything per track is derived from it: the config's ``tracks:`` switches and sections
(schemas), the models of the ONE training rule, the Snakefile's includes, the benchmark runs and the report's
tables (in this order). Adding a track: its folder ``fastdec/tracks/<name>/`` and one line here.

A track's folder holds ``plan.py`` (what it builds: the interface of fastdec.tracks.base), ``outputs.py``
(``make_table``: writes one of its tables or figures), and where it has them ``schema.yaml`` (its config section
``<name>:``) and ``rules.smk`` (its own Snakemake rules).
"""
from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from typing import Dict, List

from fastdec.tracks.base import TRACKS_DIR, BenchRun, TableItem


@dataclass(frozen=True)
class Track:
    switch: str                 # the config's ``tracks:`` key that turns it on
    name: str                   # its folder fastdec/tracks/<name>/ and its config section ``<name>:`` (with a schema)
    on_mt_chain: bool           # it builds on the MT chain (teacher -> Seq-KD -> verifier: fastdec.tracks.chain)
    default: bool = False       # on when the config's ``tracks:`` does not name it

    @property
    def plan(self):
        return importlib.import_module(f"fastdec.tracks.{self.name}.plan")

    @property
    def outputs(self):
        """What writes its tables and figures (``make_table``)."""
        return importlib.import_module(f"fastdec.tracks.{self.name}.outputs")

    @property
    def schema(self) -> str:
        """Its config section's schema, or "" (no section)."""
        path = os.path.join(TRACKS_DIR, self.name, "schema.yaml")
        return path if os.path.isfile(path) else ""

    @property
    def rules(self) -> str:
        """Its own Snakemake rules, or ""."""
        path = os.path.join(TRACKS_DIR, self.name, "rules.smk")
        return path if os.path.isfile(path) else ""

    @property
    def models(self) -> str:
        """The training rule's {track} wildcard of its models (``gad/`` -> results/<exp>/gad/models/<name>/)."""
        return f"{self.name}/"


TRACKS = (
    Track("mt_at", "mt", on_mt_chain=True, default=True),  # teacher / Seq-KD / AT verifier (GAD Table 1 AT rows)
    Track("gec_iad", "gec", on_mt_chain=False),  # a GEC model, IAD vs beam/greedy (Ge et al.)
    Track("gad", "gad", on_mt_chain=True),  # NAT drafter, GAD / GAD++ (Xia et al.)
    Track("blockwise", "blockwise", on_mt_chain=True),  # blockwise parallel decoding (Stern et al.)
    Track("students", "students", on_mt_chain=True),  # efficient students: SSRU/AAN, depths, L0 pruning (Hsu et al.)
    Track("superres", "superres", on_mt_chain=False),  # blockwise super-resolution, distance-based acceptance (Stern et al.)
)


def track(name: str) -> Track:
    for t in TRACKS:
        if t.name == name:
            return t
    raise ValueError(f"unknown track {name!r}; choose from {', '.join(t.name for t in TRACKS)}")


def enabled(config: dict) -> List[Track]:
    switches = config.get("tracks") or {}
    return [t for t in TRACKS if switches.get(t.switch, t.default)]


def fill_switches(config: dict) -> None:
    """``config["tracks"]`` with a switch for every track (its default where the config has none); a switch that
    names no track is an error."""
    switches = config.setdefault("tracks", {})
    unknown = [k for k in switches if k not in {t.switch for t in TRACKS}]
    if unknown:
        raise ValueError(f"config tracks.{unknown[0]}: no such track; the switches are "
                         f"{', '.join(t.switch for t in TRACKS)} (fastdec/tracks/registry.py)")
    for t in TRACKS:
        switches.setdefault(t.switch, t.default)


def sections() -> List[str]:
    """The config sections of the tracks (``gec:``, ``gad:``, ...)."""
    return [t.name for t in TRACKS if t.schema]


def mt_chain(config: dict) -> bool:
    """The MT chain is built when a track on it is on."""
    return any(t.on_mt_chain for t in enabled(config))


def bench_runs(config: dict, R: str) -> Dict[str, BenchRun]:
    """Every benchmark run of the enabled tracks, keyed by run directory."""
    out: Dict[str, BenchRun] = {}
    for t in enabled(config):
        out.update(getattr(t.plan, "bench_runs", lambda c, r: {})(config, R))
    for name, run in out.items():  # one precision for the whole workflow (config dtype); CPU runs stay float32
        run.dtype = config.get("dtype", "float32") if run.device == "cuda" else "float32"
        if run.device == "cuda" and not run.gpus:
            raise ValueError(f"config: the {run.track} track's run {name} decodes on CUDA but asks for no GPU; set the "
                             f"track's gpus (e.g. {run.track}.decode.gpus or {run.track}.gpus) to 1")
    return out


def table_items(config: dict, R: str) -> Dict[str, TableItem]:
    """Every table and figure of the enabled tracks, keyed by path relative to R, in report order."""
    out: Dict[str, TableItem] = {}
    for t in enabled(config):
        out.update(t.plan.table_items(config, R))
    return out
