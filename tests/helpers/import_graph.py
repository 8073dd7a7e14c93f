"""The import graph of a package, read from its import statements (``ast``; nothing is imported).

An edge ``a -> b`` is a module ``a`` importing module ``b`` anywhere in its code (module level or inside a function),
plus the packages whose ``__init__`` that import runs (``b``'s parents that are not ``a``'s own). Imports under
``if TYPE_CHECKING:`` are left out (they never run) unless ``type_checking`` asks for them (a layering that holds for
the type checker too).
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Optional, Set


def module_names(root: Path, package: str) -> Dict[str, Path]:
    """Dotted module name -> file of every module of ``package`` (its folder under ``root``)."""
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, type_checking: bool = False) -> List[ast.stmt]:
    """Every import statement of ``tree`` (outside ``if TYPE_CHECKING:`` blocks unless ``type_checking``)."""
    found: List[ast.stmt] = []

    def visit(node):
        if isinstance(node, ast.If) and _type_checking(node.test) and not type_checking:
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _parents(name: str) -> List[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def import_graph(root: Path, package: str, type_checking: bool = False) -> Dict[str, Set[str]]:
    """Module -> the modules of ``package`` it imports (see the module docstring)."""
    modules = module_names(root, package)
    graph: Dict[str, Set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in _imports(ast.parse(path.read_text(encoding="utf-8")), type_checking):
            targets: List[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = name.split(".") if is_package else name.split(".")[:-1]
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in targets:
                target = _known(target, modules)
                if target is None or target == name:
                    continue
                graph[name].add(target)
                graph[name].update(p for p in _parents(target) if p in modules and p != name and p not in _parents(name))
    return graph


def _known(target: str, modules) -> Optional[str]:
    """``target`` or its nearest enclosing module of the package (``a.b.func`` -> ``a.b``), None outside it."""
    while target and target not in modules:
        target = target.rpartition(".")[0]
    return target or None


def find_cycle(graph: Dict[str, Set[str]]) -> Optional[List[str]]:
    """One import cycle (``[a, b, ..., a]``), or None."""
    state: Dict[str, int] = {}
    stack: List[str] = []

    def visit(node) -> Optional[List[str]]:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None
