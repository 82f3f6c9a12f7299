"""Every framework adapter keeps the one contract the core relies on (SB3's MODEL_LIST pattern).

A new adapter package is picked up here without a change: the test lists ``zoo/frameworks/``.
"""

from __future__ import annotations

import ast
import inspect
import sys
from pathlib import Path

import pytest

from zoo.frameworks import Adapter, Checkpoint, HubNaming, framework_names, get_adapter
from zoo.registry import load_registry

ADAPTERS = framework_names()
ZOO = Path(__file__).resolve().parent.parent / "zoo"


def test_every_adapter_package_is_found():
    assert set(ADAPTERS) >= {"cleanrl", "sb3", "skrl", "rsl_rl"}


@pytest.mark.parametrize("name", ADAPTERS)
def test_adapter_implements_every_hook_with_the_base_signature(name):
    adapter = get_adapter(name)
    assert isinstance(adapter, Adapter) and adapter.name == name
    assert not inspect.isabstract(type(adapter)), (
        f"{name} leaves abstract hooks: {type(adapter).__abstractmethods__}"
    )
    for hook, base in inspect.getmembers(Adapter, inspect.isfunction):
        mine = getattr(type(adapter), hook)
        theirs, ours = inspect.signature(base), inspect.signature(mine)
        assert list(theirs.parameters) == list(ours.parameters), f"{name}.{hook}{ours} differs from {theirs}"


@pytest.mark.parametrize("name", ADAPTERS)
def test_adapter_declares_its_facts(name):
    adapter = get_adapter(name)
    assert isinstance(adapter.hub, HubNaming) and adapter.hub.library_name and adapter.hub.display_name
    assert (ZOO.parent / "cards_templates" / f"{adapter.hub.card_template}.md.j2").is_file()
    assert adapter.train_return_tags and all(isinstance(t, str) and t for t in adapter.train_return_tags)
    assert isinstance(adapter.layout_hint, str) and adapter.layout_hint.split(":")[0]
    assert isinstance(adapter.packages, tuple)


@pytest.mark.parametrize("name", ADAPTERS)
def test_registry_entries_of_the_framework_pass_its_own_check(name):
    entries = [e for e in load_registry().entries.values() if e.framework == name]
    assert entries, f"no registry entry uses the {name} adapter"
    adapter = get_adapter(name)
    for entry in entries:
        raw = {k: v for k, v in entry.as_dict().items() if k != "name"}
        assert adapter.entry_problem(raw) is None, entry.name


@pytest.mark.parametrize("name", ADAPTERS)
def test_read_returns_a_checkpoint_of_the_adapter(name):
    """``read`` is typed to return a Checkpoint subclass, the object check and load both consume."""
    cls = type(get_adapter(name))
    returned = inspect.signature(cls.read).return_annotation
    assert issubclass(getattr(sys.modules[cls.__module__], returned), Checkpoint)


@pytest.mark.parametrize("name", ADAPTERS)
def test_discovery_of_an_empty_folder_finds_nothing(name, tmp_path):
    assert list(get_adapter(name).discover(tmp_path)) == []


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_the_core_never_names_a_framework():
    """Outside ``zoo/frameworks/``, no module imports an adapter package or probes one with getattr."""
    for path in ZOO.rglob("*.py"):
        if "frameworks" in path.relative_to(ZOO).parts:
            continue
        text = path.read_text()
        leaked = [m for m in _imports(path) if m.startswith("zoo.frameworks.") and m != "zoo.frameworks.base"]
        assert not leaked, f"{path.relative_to(ZOO)} imports {leaked}"
        assert "getattr(adapter" not in text and "getattr(get_adapter" not in text, path


def test_adapters_do_not_import_each_other():
    for name in ADAPTERS:
        for path in (ZOO / "frameworks" / name).rglob("*.py"):
            others = [
                m
                for m in _imports(path)
                for o in ADAPTERS
                if o != name and m.startswith(f"zoo.frameworks.{o}")
            ]
            assert not others, f"{path.relative_to(ZOO)} imports {others}"


def test_an_unknown_framework_is_one_clear_error():
    from zoo.errors import ZooError

    with pytest.raises(ZooError, match="has no adapter"):
        get_adapter("tianshou")


@pytest.mark.parametrize("name", ADAPTERS)
def test_each_adapter_has_its_docs_page_listed_in_the_guide(name):
    assert (ZOO.parent / "docs" / "frameworks" / f"{name}.md").is_file()
    assert f"frameworks/{name}.md" in (ZOO.parent / "docs" / "adding-a-framework.md").read_text()
