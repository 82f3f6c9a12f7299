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
def test_check_and_load_run_the_base_skeleton_and_one_fit_check(name):
    """``describe`` and ``load_policy`` are the base's template: an adapter writes the narrower hooks they share
    (``misfit`` for both), so "ok from zoo check" and "the loader succeeds" cannot drift apart."""
    cls = type(get_adapter(name))
    for template in ("describe", "load_policy"):
        assert getattr(cls, template) is getattr(Adapter, template), f"{name} overrides {template}"
    assert {"read", "inspect", "loaded", "misfit", "build_policy"} <= Adapter.__abstractmethods__
    for hook in ("inspect", "loaded"):
        returned = inspect.signature(getattr(cls, hook)).return_annotation
        assert "PolicyView" in str(returned), f"{name}.{hook} returns {returned}"


@pytest.mark.parametrize("name", ADAPTERS)
def test_adapter_declares_its_facts(name):
    adapter = get_adapter(name)
    assert isinstance(adapter.hub, HubNaming) and adapter.hub.library_name and adapter.hub.display_name
    assert (ZOO.parent / "cards_templates" / f"{adapter.hub.card_template}.md.j2").is_file()
    assert adapter.train_return_tags and all(isinstance(t, str) and t for t in adapter.train_return_tags)
    assert isinstance(adapter.layout_hint, str) and adapter.layout_hint.split(":")[0]
    assert isinstance(adapter.packages, tuple)
    assert adapter.extra is None or adapter.extra in adapter.extra_modules, "extra must be one it states"
    assert all(isinstance(m, tuple) and m for m in adapter.extra_modules.values())
    assert isinstance(adapter.training_command, str) and isinstance(adapter.training_script, str)


@pytest.mark.parametrize("name", ADAPTERS)
def test_adapter_extras_are_zoo_extras_and_its_training_command_fills_from_a_config(name):
    """The extras an adapter states exist in pyproject.toml; doctor's handoff can fill its command."""
    import tomllib

    extras = tomllib.loads((ZOO.parent / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    adapter = get_adapter(name)
    assert set(adapter.extra_modules) <= set(extras)
    config = {
        "framework": name,
        "algorithm": "ppo",
        "env_id": "CartPole-v1",
        "seed": 1,
        "total_timesteps": 1000,
        "num_envs": 2,
        "wall_time_minutes": 5,
        "output_dir": "out",
    }
    fields = {
        **config,
        "script": adapter.training_script.format(**config),
        "config": "exp.yaml",
        "checkpoint_every": 100,
        "eval_every": 100,
        "eval_episodes": 10,
        "iterations": 3,
        "hyperparams": "",
    }
    command = adapter.training_command.format(**fields)
    assert "CartPole-v1" in command or "exp.yaml" in command


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


#: Core string constants equal to a framework name that are not facts of that framework, each with why.
NAMED_IN_THE_CORE = {
    # Stable-Baselines3's own callback (ZooEvalCallback) runs inside SB3 training, for SB3 runs only:
    # it is SB3 code by nature, outside zoo's core paths (no command imports it).
    ("integrations/sb3.py", "sb3"),
}


def _string_constants(tree: ast.AST) -> list[ast.Constant]:
    """Every str constant of a module but its docstrings (prose that names a library is no fact)."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def test_the_core_writes_no_framework_name():
    """Every per-framework fact comes from the adapter: a framework's name written as a string in a core
    module (a choice list, a dict of commands, an ``if framework == ...``) is a fact kept out of its adapter."""
    names = set(framework_names())
    found = []
    for path in sorted(ZOO.rglob("*.py")):
        where = path.relative_to(ZOO)
        if where.parts[0] == "frameworks":
            continue
        for node in _string_constants(ast.parse(path.read_text())):
            if node.value in names and (where.as_posix(), node.value) not in NAMED_IN_THE_CORE:
                found.append(f"{where}:{node.lineno}: {node.value!r}")
    assert not found, "framework names in the core (state them in the adapter):\n" + "\n".join(found)


def test_the_name_check_sees_a_framework_name_in_a_list():
    """The check above finds what it is for: a name in a choice list or a dict key, not in a docstring."""
    source = (
        '"""Loads sb3 runs."""\nCHOICES = ["cleanrl", "sb3-zip"]\nCOMMANDS = {"skrl": "python train.py"}\n'
    )
    values = [n.value for n in _string_constants(ast.parse(source)) if n.value in set(framework_names())]
    assert values == ["cleanrl", "skrl"]


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
        get_adapter("not_a_framework")


@pytest.mark.parametrize("name", ADAPTERS)
def test_each_adapter_has_its_docs_page_listed_in_the_guide(name):
    assert (ZOO.parent / "docs" / "frameworks" / f"{name}.md").is_file()
    assert f"frameworks/{name}.md" in (ZOO.parent / "docs" / "adding-a-framework.md").read_text()


# ----------------------------------------------------------------------------- following training (zoo watch)
#: One run dir per framework as its trainer lays it out (file names only: the hook reads listings), with
#: zoo watch's best model in it already, and the checkpoints the hook must list: (step, model, companions).
SAVED_RUNS = {
    "cleanrl": (
        [
            "dqn_2000.cleanrl_model",
            "dqn_1000.cleanrl_model",
            "dqn.cleanrl_model",
            "best_model.cleanrl_model",
            "events.out.tfevents.1.host",
        ],
        [
            (1000, "dqn_1000.cleanrl_model", {}),
            (2000, "dqn_2000.cleanrl_model", {}),
            (None, "dqn.cleanrl_model", {}),
        ],
    ),
    "sb3": (
        [
            "rl_model_1000_steps.zip",
            "rl_model_vecnormalize_1000_steps.pkl",
            "rl_model_500_steps.zip",
            "best_model.zip",
            "best_model_vecnormalize.pkl",
            "ppo_final.zip",
            "notes.zip",
        ],
        [
            (500, "rl_model_500_steps.zip", {}),
            (1000, "rl_model_1000_steps.zip", {"vecnormalize": "rl_model_vecnormalize_1000_steps.pkl"}),
            (None, "ppo_final.zip", {}),
        ],
    ),
    "skrl": (
        [
            "checkpoints/agent_100.pt",
            "checkpoints/agent_20.pt",
            "checkpoints/best_agent.pt",
            "best_model.pt",
            "params/agent.yaml",
        ],
        [(20, "checkpoints/agent_20.pt", {}), (100, "checkpoints/agent_100.pt", {})],
    ),
    "rsl_rl": (
        ["model_10.pt", "model_2.pt", "best_model.pt", "params/agent.yaml"],
        [(2, "model_2.pt", {}), (10, "model_10.pt", {})],
    ),
    "deprl": (
        [
            "config.yaml",
            "checkpoints/step_1000.pt",
            "checkpoints/step_500.pt",
            "checkpoints/time.pt",
            "checkpoints/obs_norm.pt",
            "best_model.pt",
        ],
        [(500, "checkpoints/step_500.pt", {}), (1000, "checkpoints/step_1000.pt", {})],
    ),
}
BEST_NAMES = {
    "cleanrl": ["best_model.cleanrl_model"],
    "sb3": ["best_model.zip", "best_model_vecnormalize.pkl"],
    "skrl": ["best_model.pt"],
    "rsl_rl": ["best_model.pt"],
    "deprl": ["best_model.pt"],
}


def _lay_out(root: Path, names: list[str]) -> Path:
    import zipfile

    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name == "ppo_final.zip":  # an SB3 zip saved over in place is recognised by its central directory
            with zipfile.ZipFile(path, "w") as zf:
                zf.writestr("data", "{}")
                zf.writestr("policy.pth", b"")
        else:
            path.write_bytes(b"")
    return root


@pytest.mark.parametrize("name", ADAPTERS)
def test_checkpoints_of_an_empty_folder_are_none_and_best_names_start_with_best_model(name, tmp_path):
    from zoo.frameworks import BEST_MODEL, SavedCheckpoint

    adapter = get_adapter(name)
    assert adapter.checkpoints(tmp_path) == []
    names = adapter.best_model_files(
        tmp_path, SavedCheckpoint(1, tmp_path / "model_1.pt", {"x": tmp_path / "x.pkl"})
    )
    assert names and all(n.startswith(BEST_MODEL) for n in names)
    assert next(iter(names.values())) == tmp_path / "model_1.pt", "the model comes first"


@pytest.mark.parametrize("name", sorted(SAVED_RUNS))
def test_checkpoints_lists_a_training_run_by_step_and_never_the_best_model(name, tmp_path):
    files, expected = SAVED_RUNS[name]
    run = _lay_out(tmp_path / "run", files)
    adapter = get_adapter(name)
    found = adapter.checkpoints(run)
    assert [
        (
            c.step,
            c.model_file.relative_to(run).as_posix(),
            {k: v.relative_to(run).as_posix() for k, v in c.companions.items()},
        )
        for c in found
    ] == expected
    assert list(adapter.best_model_files(run, found[-1] if name != "sb3" else found[1])) == BEST_NAMES[name]


@pytest.mark.parametrize("name", ["cleanrl", "skrl", "rsl_rl", "deprl"])
def test_the_best_model_is_not_the_latest_checkpoint_but_loads_as_the_run_s_model(name, tmp_path):
    """A run dir's model stays its latest checkpoint; the best model given by name is read as a model of
    that very run (its config and names), and claimed by one framework only."""
    from zoo.artifacts.runs import RunFilter
    from zoo.checker import discover_runs

    files, expected = SAVED_RUNS[name]
    run = _lay_out(tmp_path / "CartPole-v1__dqn__1__1700000000", files)
    (found,) = list(get_adapter(name).discover(run))
    latest = {"cleanrl": "dqn.cleanrl_model"}.get(name, expected[-1][1])
    assert found.model_file == run / latest
    best = run / BEST_NAMES[name][0]
    (given,) = list(discover_runs([best], load_registry(), RunFilter()))
    assert (given.framework, given.path, given.model_file) == (name, run, best)


def test_skrl_per_module_checkpoints_keep_their_scalers_under_best_model_names(tmp_path):
    from zoo.frameworks.skrl.discover import companion, parse_checkpoint

    names = [
        "checkpoints/policy_100.pt",
        "checkpoints/observation_preprocessor_100.pt",
        "checkpoints/value_100.pt",
    ]
    run = _lay_out(tmp_path / "exp", names)
    adapter = get_adapter("skrl")
    (saved,) = adapter.checkpoints(run)
    assert saved.step == 100 and saved.companions == {"observation_preprocessor": run / names[1]}
    files = adapter.best_model_files(run, saved)
    assert list(files) == ["best_model_policy.pt", "best_model_observation_preprocessor.pt"]
    assert parse_checkpoint("best_model_policy.pt") == ("policy", None)
    assert companion(run / "best_model_policy.pt", "observation_preprocessor") == run / files.popitem()[0]
