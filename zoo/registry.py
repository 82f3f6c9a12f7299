"""The experiment registry: ``registry.yaml`` loaded, merged and validated.

The bundled file ships inside the wheel (``zoo/_bundled``) and sits at the repo
root in a checkout. A plug-in adapter may ship its own entries
(:attr:`~zoo.frameworks.Adapter.registry_file`): they are added after the
bundled ones, for its framework only and under names not yet taken. A user file
(``--registry FILE`` or ``ZOO_REGISTRY``) is merged over them entry by entry and
checked with the same rules, so that a typo fails on load with the entry and
field named, not later in a rollout.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zoo.envs import PRESETS
from zoo.errors import ZooError
from zoo.frameworks import Adapter, framework_names, get_adapter

FORMATS = ("torch-state-dict", "torch-checkpoint", "sb3-zip", "flax-msgpack", "safetensors", "pickle")
#: The env extras an entry may list; a framework's extras are its adapter's (``Adapter.extra_modules``).
ENV_EXTRAS = ("mujoco", "atari", "video")
_EVAL_KEYS = {"episodes": int, "deterministic": bool, "epsilon": float, "exploration_noise": float}


def bundled_path() -> Path:
    """The registry shipped with zoo (wheel data, else the checkout's root)."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "_bundled" / "registry.yaml", here.parent / "registry.yaml"):
        if candidate.is_file():
            return candidate
    raise ZooError("bundled registry.yaml not found; reinstall rl-zoo-hub")


@dataclass(frozen=True)
class Entry:
    """One experiment: everything needed to find, load and evaluate its models."""

    name: str
    framework: str
    algorithm: str
    format: str
    filename: str
    env: dict[str, Any]
    eval: dict[str, Any]
    layout: dict[str, Any] = field(default_factory=dict)  # framework-specific, checked by the adapter
    model: dict[str, str] = field(default_factory=dict)
    policy: dict[str, str] = field(default_factory=dict)
    extras: list[str] = field(default_factory=list)
    hub: dict[str, str] = field(default_factory=dict)

    @property
    def parts(self) -> list[str]:
        return list(self.layout["parts"])

    def _fields(self, **values: Any) -> dict[str, Any]:
        """Placeholders the filename and hub patterns may use."""
        return {"exp_name": self.name, "algo": self.algorithm.lower(), **values}

    def model_filename(self, **values: Any) -> str:
        """The model's file name; SB3-style patterns also take ``env_id``."""
        return self.filename.format_map(self._fields(**values))

    def hub_repo(self, *, hf_entity: str, env_id: str, seed: int) -> str:
        """The hub repo id: ``{hf_entity}`` (alias ``{org}``), ``{env_id}``, ``{exp_name}``, ``{seed}``, ``{algo}``."""
        return self.hub["repo"].format_map(
            self._fields(hf_entity=hf_entity, org=hf_entity, env_id=env_id, seed=seed)
        )

    def stochastic_mode(self) -> str:
        """How the published eval mode picks actions: epsilon-greedy, noise or sampling."""
        if "epsilon" in self.eval:
            return f"epsilon {self.eval['epsilon']}"
        if "exploration_noise" in self.eval:
            return f"noise {self.eval['exploration_noise']}"
        return "sampled"

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


class Registry:
    """Validated entries by name, with close-match suggestions for typos."""

    def __init__(self, entries: dict[str, Entry], sources: list[Path]):
        self.entries = entries
        self.sources = sources

    def names(self) -> list[str]:
        return sorted(self.entries)

    def get(self, name: str) -> Entry:
        if name in self.entries:
            return self.entries[name]
        close = difflib.get_close_matches(name, self.names(), n=3, cutoff=0.6)
        hint = f"did you mean {', '.join(close)}?" if close else "see `zoo registry list`"
        raise ZooError(f"unknown experiment {name!r}", hint=hint)

    def find(self, name: str) -> Entry | None:
        return self.entries.get(name)


def _fail(source: Path, name: str, fieldname: str, problem: str) -> ZooError:
    return ZooError(f"invalid registry {source}: entry {name!r}, field {fieldname!r}: {problem}")


def _require(source: Path, name: str, raw: dict, key: str, kind: type) -> Any:
    if key not in raw:
        raise _fail(source, name, key, "missing")
    value = raw[key]
    if not isinstance(value, kind):
        raise _fail(source, name, key, f"expected {kind.__name__}, got {type(value).__name__}")
    return value


def _adapter(source: Path, name: str, framework: str) -> Adapter:
    """The framework's adapter (``zoo/frameworks/<framework>``): it checks its own fields."""
    if framework not in framework_names():
        raise _fail(
            source, name, "framework", f"{framework!r} has no adapter in zoo/frameworks/ nor a plug-in"
        )
    return get_adapter(framework)


def _known_extra(extra: Any, adapter: Adapter) -> bool:
    """An env extra, one of the entry's own adapter's, or (asked last: it imports them) another adapter's."""
    if not isinstance(extra, str):
        return False
    if extra in ENV_EXTRAS or extra in adapter.extra_modules:
        return True
    return any(extra in get_adapter(other).extra_modules for other in framework_names())


def known_extras() -> list[str]:
    """Every extra an entry may list, env extras first."""
    return [*ENV_EXTRAS, *(e for other in framework_names() for e in get_adapter(other).extra_modules)]


def _one_of(source: Path, name: str, key: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise _fail(source, name, key, f"{value!r} is not one of {', '.join(allowed)}")


def validate_entry(source: Path, name: str, raw: Any) -> Entry:
    """Check one raw mapping and build an :class:`Entry`; the first problem raises."""
    if not isinstance(raw, dict):
        raise _fail(source, name, "-", f"expected a mapping, got {type(raw).__name__}")
    allowed = set(Entry.__dataclass_fields__) - {"name"}
    for key in raw:
        if key not in allowed:
            raise _fail(source, name, key, f"unknown field; allowed: {', '.join(sorted(allowed))}")
    framework = _require(source, name, raw, "framework", str)
    adapter = _adapter(source, name, framework)
    fmt = _require(source, name, raw, "format", str)
    _one_of(source, name, "format", fmt, FORMATS)
    filename = _require(source, name, raw, "filename", str)
    for key in ("layout", "model", "policy"):
        if not isinstance(raw.get(key, {}), dict):
            raise _fail(source, name, key, f"expected a mapping, got {type(raw[key]).__name__}")
    problem = adapter.entry_problem(raw)
    if problem:
        raise _fail(source, name, *problem)
    env = _require(source, name, raw, "env", dict)
    _one_of(source, name, "env.wrappers", env.get("wrappers", "<missing>"), PRESETS)
    evaluation = _require(source, name, raw, "eval", dict)
    for key, value in evaluation.items():
        kind = _EVAL_KEYS.get(key)
        if kind is None:
            raise _fail(source, name, f"eval.{key}", f"unknown; allowed: {', '.join(_EVAL_KEYS)}")
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise _fail(source, name, f"eval.{key}", f"expected {kind.__name__}, got {value!r}")
        if kind in (int, float) and value < 0:
            raise _fail(source, name, f"eval.{key}", "must not be negative")
    evaluation.setdefault("episodes", 10)
    evaluation.setdefault("deterministic", True)
    extras = raw.get("extras", [])
    if not isinstance(extras, list) or not all(_known_extra(e, adapter) for e in extras):
        raise _fail(source, name, "extras", f"expected a list drawn from {', '.join(known_extras())}")
    hub = raw.get("hub", {})
    if not isinstance(hub, dict) or not isinstance(hub.get("repo", ""), str):
        raise _fail(source, name, "hub.repo", "expected a string pattern")
    tags = hub.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise _fail(source, name, "hub.tags", "expected a list of strings (extra model-card tags)")
    return Entry(
        name=name,
        framework=framework,
        algorithm=str(raw.get("algorithm", name)),
        format=fmt,
        filename=filename,
        layout=raw.get("layout", {}),
        model=raw.get("model", {}),
        policy=raw.get("policy", {}),
        env=env,
        eval=evaluation,
        extras=list(extras),
        hub=hub,
    )


def _read_yaml(path: Path) -> dict:
    from zoo import safeyaml

    try:
        data = safeyaml.read(path)
    except ZooError as exc:
        raise ZooError(f"invalid registry {exc.message}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ZooError(f"invalid registry {path}: top level must be a mapping of experiment names")
    return data


def _plugin_entries(entries: dict[str, Entry]) -> list[Path]:
    """Add the entries each plug-in adapter ships (its framework only, names not yet taken); their files."""
    sources = []
    for framework in framework_names():
        source = get_adapter(framework).registry_file
        if source is None:
            continue
        sources.append(Path(source))
        for name, raw in _read_yaml(Path(source)).items():
            if str(name) in entries:
                raise _fail(Path(source), str(name), "-", "an entry zoo already has by that name (rename it)")
            entry = validate_entry(Path(source), str(name), raw)
            if entry.framework != framework:
                raise _fail(
                    Path(source),
                    entry.name,
                    "framework",
                    f"the {framework} adapter ships {framework} entries only",
                )
            entries[entry.name] = entry
    return sources


def load_registry(user_file: str | os.PathLike | None = None) -> Registry:
    """The bundled registry, the plug-in adapters' entries, then ``user_file`` (or ``$ZOO_REGISTRY``) merged over."""
    bundled = bundled_path()
    entries = {
        str(name): validate_entry(bundled, str(name), raw) for name, raw in _read_yaml(bundled).items()
    }
    sources = [bundled, *_plugin_entries(entries)]
    user = user_file or os.environ.get("ZOO_REGISTRY")
    if user:
        sources.append(Path(user))
        for name, raw in _read_yaml(Path(user)).items():
            entries[str(name)] = validate_entry(Path(user), str(name), raw)
    return Registry(entries, sources)
