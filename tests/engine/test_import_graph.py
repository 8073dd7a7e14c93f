"""The engine's modules import each other without a cycle: every ``import``/``from`` statement counts, also those
inside functions and ``TYPE_CHECKING`` blocks. And importing the engine leaves fairseq unimported (the drafters that
need it are built by name, their modules imported then)."""
import subprocess
import sys
from pathlib import Path

from helpers.import_graph import find_cycle, import_graph

REPO = Path(__file__).resolve().parents[2]
PACKAGE = "fastdec.engine"


def engine_graph() -> dict:
    """The engine's modules and their imports of each other, type-only imports included."""
    graph = import_graph(REPO, "fastdec", type_checking=True)
    inside = {m for m in graph if m == PACKAGE or m.startswith(PACKAGE + ".")}
    return {m: graph[m] & inside for m in inside}


def test_the_engine_has_no_import_cycle():
    graph = engine_graph()
    assert {f"{PACKAGE}.loop", f"{PACKAGE}.drafters", f"{PACKAGE}.state"} <= set(graph)
    assert f"{PACKAGE}.state" in graph[f"{PACKAGE}.drafters"]  # a TYPE_CHECKING import is an edge too
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle)


def test_importing_the_engine_does_not_import_fairseq():
    code = ("import sys, fastdec.engine, fastdec.engine.batched, fastdec.engine.drafters; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('fairseq', 'fastdec_fairseq')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
