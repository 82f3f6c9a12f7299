"""zoo's modules import each other without cycles, deferred imports included, and what a part reaches
through the whole import graph stays inside its layer.

A cycle hidden by a function-level import still couples two concerns both ways (the review found
``targets`` <-> ``export``, ``hub`` -> ``check`` -> ..., ``registry`` <-> adapters); this keeps them apart.
Imports under ``if TYPE_CHECKING:`` are for annotations only and do not count.

Reach (:func:`_reach`) follows every import of a module, deferred ones included (its functions may run),
and the top-level imports of each package above it (importing ``a.b.c`` runs ``a/__init__`` and
``a/b/__init__``, not their functions): the client of the hub (``zoo.hub``, ``zoo.api``, ``zoo``) never
reaches the server (``zoo.hub_server``), and the server never reaches the checker or an adapter.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
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


def _function_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def _edges(module: str, deferred: bool = True) -> set[str]:
    """The zoo modules ``module`` imports; with ``deferred=False`` only those its import runs (none that a
    function body imports)."""
    tree = ast.parse(MODULES[module].read_text())
    skip = _type_checking_lines(tree) | (set() if deferred else _function_lines(tree))
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
    return found


def _imports(module: str) -> set[str]:
    found = _edges(module)
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


def _packages_above(module: str) -> list[str]:
    parts = module.split(".")
    return [p for i in range(1, len(parts)) if (p := ".".join(parts[:i])) in MODULES]


def _reach(roots: list[str]) -> dict[str, str | None]:
    """Every module that importing ``roots`` (and calling their functions) can load, each with the module
    that first led to it (None for a root): see the module docstring."""
    via: dict[str, str | None] = {}
    inits_done: set[str] = set()
    todo: list[tuple[str, bool, str | None]] = [(root, True, None) for root in roots]
    while todo:
        module, whole, parent = todo.pop()
        if module in via or (not whole and module in inits_done):
            continue
        if whole:
            via[module] = parent
        else:
            inits_done.add(module)
            via.setdefault(module, parent)
        todo += [(target, True, module) for target in _edges(module, deferred=whole)]
        todo += [(package, False, module) for package in _packages_above(module)]
    return via


def _path(via: dict[str, str | None], module: str) -> str:
    chain: list[str] = []
    node: str | None = module
    while node is not None:
        chain.append(node)
        node = via[node]
    return " <- ".join(chain)


SERVER = "zoo.hub_server"


def _in(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_only_the_server_and_the_cli_import_the_hub_server():
    for module in MODULES:
        if not (_in(module, SERVER) or _in(module, "zoo.cli")):
            assert not {t for t in _edges(module) if _in(t, SERVER)}, module


def test_the_client_and_the_library_never_reach_the_hub_server():
    roots = ["zoo", "zoo.api", *(m for m in MODULES if _in(m, "zoo.hub"))]
    via = _reach(roots)
    assert [_path(via, m) for m in via if _in(m, SERVER)] == []


def test_the_hub_server_reaches_neither_the_checker_nor_an_adapter():
    via = _reach([m for m in MODULES if _in(m, SERVER)])
    bad = [m for m in via if _in(m, "zoo.frameworks") or m in ("zoo.checker", "zoo.targets", "zoo.api")]
    assert [_path(via, m) for m in bad] == []


def test_the_reach_follows_deferred_imports_and_the_packages_above():
    """The rule above would pass vacuously if reach missed edges: it finds the CLI's deferred import of the
    server, and the adapters behind the checker."""
    assert "zoo.hub_server.server" in _reach(["zoo.cli"])
    assert any(_in(m, "zoo.frameworks") for m in _reach(["zoo.ranking.runs"]))
    assert "zoo.version" in _reach(["zoo.ranking.stats"])  # through zoo/__init__'s top level


def test_importing_zoo_and_the_hub_client_loads_no_web_stack():
    """At run time too: the library and the hub client import neither the server nor its web stack."""
    code = (
        "import sys, zoo, zoo.api, zoo.hub.push, zoo.hub.fetch, zoo.hub.repo_target, zoo.hub.card; "
        "zoo.check; "  # the facade's lazy API
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('starlette', 'uvicorn', 'markdown_it', "
        "'nh3') or m.startswith('zoo.hub_server')))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
