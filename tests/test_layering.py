"""zoo's modules import each other without cycles, deferred imports included.

A cycle hidden by a function-level import still couples two concerns both ways (the review found
``targets`` <-> ``export``, ``hub`` -> ``check`` -> ..., ``registry`` <-> adapters); this keeps them apart.
Imports under ``if TYPE_CHECKING:`` are for annotations only and do not count.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ZOO = ROOT / "zoo"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in ZOO.rglob("*.py")}


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def _resolve(name: str) -> str | None:
    """The zoo module an import names (``from zoo.x import y`` may name module ``zoo.x.y``)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str) -> set[str]:
    tree = ast.parse(MODULES[module].read_text())
    skip = _type_checking_lines(tree)
    found: set[str] = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("zoo"):
            for alias in node.names:
                target = _resolve(f"{node.module}.{alias.name}") or _resolve(node.module)
                if target:
                    found.add(target)
        elif isinstance(node, ast.Import):
            found.update(t for a in node.names if a.name.startswith("zoo") and (t := _resolve(a.name)))
    found.discard(module)
    # a package's own submodules and its parents are the same unit: only edges between units count
    return {t for t in found if not (t.startswith(module + ".") or module.startswith(t + "."))}


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    graph = {m: _imports(m) for m in MODULES}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_no_import_cycles_even_through_deferred_imports():
    assert _cycles() == []


def test_the_hub_and_the_exporter_do_not_reach_back_into_evaluation_or_checking():
    for module in MODULES:
        if module.startswith(("zoo.hub", "zoo.exporter")):
            assert not {"zoo.checker", "zoo.targets", "zoo.api", "zoo.cli"} & _imports(module), module
