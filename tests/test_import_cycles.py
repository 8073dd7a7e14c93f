"""The package's import graph has no cycle, and the layers above the engine import only downwards: the benchmark
layer decodes (imports no report, track, claim or workflow module), report renders (imports no track, claim or
workflow), a track imports no claim or workflow module, the claims no workflow module."""
from pathlib import Path

import pytest

from helpers.import_graph import find_cycle, import_graph

REPO = Path(__file__).resolve().parents[1]
# lowest first: a module may import its own layer and those below it
LAYERS = ["fastdec.bench", "fastdec.report", "fastdec.tracks", "fastdec.claims", "fastdec.workflow"]


@pytest.fixture(scope="module")
def graph():
    return import_graph(REPO, "fastdec")


def _layer(module: str):
    return next((i for i, p in enumerate(LAYERS) if module == p or module.startswith(p + ".")), None)


def test_no_import_cycle(graph):
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def test_the_graph_sees_imports_inside_functions(graph):
    # the table command imports the experiment layer inside its main(): the graph has that edge
    assert "fastdec.workflow.experiments" in graph["fastdec.workflow.tables_cli"]


def test_a_cycle_is_found():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize("layer", LAYERS)
def test_no_layer_imports_one_above_it(graph, layer):
    upward = sorted(f"{m} -> {t}" for m, targets in graph.items() if _layer(m) == LAYERS.index(layer)
                    for t in targets if (_layer(t) or -1) > LAYERS.index(layer))
    assert not upward, "\n".join(upward)
