"""The engine's modules import each other without a cycle: every ``import``/``from`` statement counts, also those
inside functions and ``TYPE_CHECKING`` blocks. And importing the engine leaves fairseq unimported (the drafters that
need it are built by name, their modules imported then)."""
import ast
import subprocess
import sys
from pathlib import Path

import fastdec.engine

ENGINE = Path(fastdec.engine.__file__).parent
PACKAGE = "fastdec.engine"


def module_name(path: Path) -> str:
    return PACKAGE if path.name == "__init__.py" else f"{PACKAGE}.{path.stem}"


def import_graph(root: Path = ENGINE) -> dict:
    """Module -> the engine modules it imports (relative imports resolved; ``from . import x`` counts as ``x``)."""
    modules = {module_name(p): p for p in sorted(root.glob("*.py"))}
    graph = {}
    for name, path in modules.items():
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative to this package (every engine module sits directly in it)
                    parent = PACKAGE.rsplit(".", node.level - 1)[0]
                    base = f"{parent}.{base}" if base else parent
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            else:
                continue
            edges |= {t for t in targets if t in modules and t != name}
        graph[name] = edges
    return graph


def find_cycle(graph: dict):
    """One import cycle as a list of modules (first == last), or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_engine_has_no_import_cycle():
    graph = import_graph()
    assert {f"{PACKAGE}.loop", f"{PACKAGE}.drafters", f"{PACKAGE}.state"} <= set(graph)
    assert f"{PACKAGE}.state" in graph[f"{PACKAGE}.drafters"]  # a TYPE_CHECKING import is an edge too
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle)


def test_a_cycle_is_found():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_importing_the_engine_does_not_import_fairseq():
    code = ("import sys, fastdec.engine, fastdec.engine.batched, fastdec.engine.drafters; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('fairseq', 'fastdec_fairseq')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
