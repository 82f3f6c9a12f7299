"""The batched tensor-env contract: thousands of envs stepped as torch tensors on one device.

Genesis, Isaac Lab and mjlab step every env of a batch at once, on the GPU, and hand back torch
tensors. zoo evaluates such an env through the shape rsl_rl's ``VecEnv`` gives it (so an env written
for rsl_rl's runner plugs in unchanged):

- attributes ``num_envs: int``, ``num_actions: int``, ``device`` (a ``torch.device`` or its name) and,
  when the env has one, ``max_episode_length: int`` (steps after which an episode times out);
- ``get_observations()`` -> the current observations: a ``(num_envs, dim)`` tensor (the one group
  ``policy``) or a mapping of observation-group names to ``(num_envs, ...)`` tensors (rsl_rl 5's
  ``TensorDict``); ``reset()``, when the env has it, is called once first and returns the same;
- ``step(actions)`` with a ``(num_envs, num_actions)`` tensor on ``device`` -> ``(obs, rewards, dones,
  extras)``: ``rewards`` and ``dones`` are ``(num_envs,)`` tensors, an env that is done is reset by the
  env itself in the same step (``obs`` is then its first observation), ``extras["time_outs"]`` marks
  the dones that are time limits rather than terminations, and ``extras["is_success"]``, when the env
  has a notion of success, is read at each done;
- ``close()``, optional, is called when the evaluation ends;
- ``reseed(seed)``, optional: every env back to the state a fresh build with ``seed`` starts in (its
  random draws included), the simulator kept. An env that has it is built once and kept for many
  evaluations (``zoo watch``: one scene, its kernels compiled once, for every checkpoint).

Everything stays on ``device``: zoo's tensor rollout (:mod:`zoo.tensor_rollout`) accumulates returns,
lengths, quotas and success flags there, and the host sees the episodes once every quota is filled.

zoo ships task definitions of its own (:data:`TASKS`, built from a run's config: Genesis' Go2
walking and drone hover); a user's env (an Isaac Lab task behind the user's launcher, a custom
Genesis scene) comes from ``--env-factory module:function``, which is user code and runs only when
named. Either is described by a :class:`TensorEnvSpec`.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from zoo.errors import UsageError, ZooError

#: The observation group a bare tensor observation is (rsl_rl's default group name).
DEFAULT_GROUP = "policy"

#: zoo's own task definitions: id -> ``module:class``. Each class is built as
#: ``cls(num_envs=..., device=..., seed=..., cfgs=..., video_dir=...)`` and follows :class:`TensorEnv`;
#: its module imports the simulator only when an env is built.
TASKS: dict[str, str] = {
    "Genesis-Go2Walking-v0": "zoo.tasks.genesis.go2:Go2Walking",
    "Genesis-DroneHover-v0": "zoo.tasks.genesis.hover:DroneHover",
}
#: The optional extra each task family needs (``pip install 'rl-zoo-hub[genesis]'``).
TASK_EXTRAS = {"Genesis-": "genesis"}


class TensorEnv(Protocol):
    """What zoo needs of a batched tensor env (rsl_rl's ``VecEnv`` shape; see the module docstring)."""

    num_envs: int
    num_actions: int
    device: Any

    def get_observations(self) -> Any: ...

    def step(self, actions: Any) -> tuple[Any, Any, Any, dict]: ...


@dataclass(frozen=True)
class Term:
    """One term of an observation group, as a deployment must compute it: ``clip(raw * scale)`` at
    ``[start, start + dim)`` of the group's vector (``clip`` None: not clipped)."""

    name: str
    start: int
    dim: int
    scale: float | tuple[float, ...] = 1.0
    clip: float | None = None

    def to_json(self) -> dict:
        scale = list(self.scale) if isinstance(self.scale, tuple) else self.scale
        return {"name": self.name, "start": self.start, "dim": self.dim, "scale": scale, "clip": self.clip}


def terms_of(*spec: tuple[str, int, float | tuple[float, ...], float | None]) -> tuple[Term, ...]:
    """Terms laid out one after another from ``(name, dim, scale, clip)`` tuples."""
    terms, start = [], 0
    for name, dim, scale, clip in spec:
        terms.append(Term(name, start, dim, scale, clip))
        start += dim
    return tuple(terms)


@dataclass(frozen=True)
class TensorEnvSpec:
    """A tensor env to build: one of zoo's :data:`TASKS` (configured from the run's config, else the
    task's defaults) or the user's ``factory`` (``module:function``, called as
    ``function(num_envs=..., device=..., seed=...)``)."""

    env_id: str
    factory: str | None = None  # the user's module:function (--env-factory); None: zoo's task definition
    #: The run's config (its cfgs.pkl, as read once by the adapter, or as a sidecar records it) as JSON
    #: text, so that the spec stays frozen and hashable; None: the task's defaults.
    cfgs_json: str | None = None
    video_dir: str | None = None
    #: Where the env's replays and video failures are reported (:class:`zoo.envs.VideoLog`).
    video_log: Any = field(default=None, compare=False, repr=False)
    #: The rollout's step bound (``--max-steps``; None: the env's ``max_episode_length``, else the default cap).
    #: The rollout applies it, not the env, so an env kept for many evaluations serves any bound.
    max_steps: int | None = field(default=None, compare=False)

    @property
    def where(self) -> str:
        """How error lines name the env: the user's factory, or zoo's task."""
        return f"--env-factory {self.factory}" if self.factory else self.env_id

    def to_json(self) -> dict:
        """The env as an exported policy's sidecar records it."""
        data: dict = {"id": self.env_id, "preset": "tensor"}
        if self.factory:
            data["factory"] = self.factory
        cfgs = self.config()
        if cfgs is not None:
            data["cfgs"] = cfgs
        return data

    @classmethod
    def from_json(cls, data: dict, factory: str | None = None, video_dir: str | None = None) -> TensorEnvSpec:
        """The env a sidecar records (``factory``: the user's, which replaces the recorded one)."""
        return cls(
            data["id"],
            factory=factory or data.get("factory"),
            video_dir=video_dir,
            cfgs_json=cfgs_json(data.get("cfgs")),
        )

    def deployment_notes(self) -> list[str]:
        """What a deployment must compute around the policy: the task's own words, or the user's env's."""
        if self.factory:
            return [f"observations come from the user's env ({self.factory}): compute them as it does"]
        return self.task_class().deployment_notes(self.config())

    def task_class(self):
        """The class of zoo's task definition (imports its module, not the simulator)."""
        module_name, _, attr = TASKS[self.env_id].partition(":")
        return getattr(importlib.import_module(module_name), attr)

    def config(self) -> list[dict] | None:
        """The run's config (a list of plain dicts), or None: the task's defaults apply."""
        import json

        return None if self.cfgs_json is None else json.loads(self.cfgs_json)

    def obs_terms(self) -> dict[str, tuple[Term, ...]]:
        """The task's observation terms by group (empty for a user's env: zoo does not know them)."""
        if self.factory:
            return {}
        return self.task_class().obs_terms(self.config())

    def spaces(self) -> tuple[Any, Any] | None:
        """``(observation_space, action_space)`` of zoo's task, without building it (a gymnasium Dict of
        the observation groups and a Box of the actions); None for a user's env, known once built."""
        if self.factory:
            return None
        return self.task_class().spaces(self.config())


def cfgs_json(cfgs: list[dict] | None) -> str | None:
    """A run's config as :attr:`TensorEnvSpec.cfgs_json` holds it."""
    import json

    return None if cfgs is None else json.dumps(cfgs)


def is_task(env_id: str) -> bool:
    """Whether ``env_id`` names one of zoo's tensor tasks."""
    return env_id in TASKS


def extra_for(env_id: str) -> str | None:
    """The optional extra a task needs, by its id's prefix (no imports)."""
    return next((extra for prefix, extra in TASK_EXTRAS.items() if env_id.startswith(prefix)), None)


def _load_factory(ref: str):
    """The user's ``module:function``, imported: a module or name that is not there is one usage line."""
    module_name, _, attr = ref.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(
            f"--env-factory {ref}: cannot import {module_name!r} ({exc})",
            hint="name an importable module:function (the module on sys.path / PYTHONPATH)",
        ) from None
    try:
        factory = getattr(module, attr)
    except AttributeError:
        raise UsageError(
            f"--env-factory {ref}: module {module_name!r} has no {attr!r}",
            hint="name an importable module:function",
        ) from None
    if not callable(factory):
        raise UsageError(
            f"--env-factory {ref}: {type(factory).__name__} is not callable",
            hint="name a function that returns the env",
        )
    return factory


def parse_factory(ref: str) -> str:
    """``module:function`` checked for shape (nothing imported): the one form ``--env-factory`` takes."""
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr.isidentifier():
        raise UsageError(
            f"--env-factory {ref!r}: expected module:function",
            hint="for example --env-factory my_tasks.isaac:make_env",
        )
    return ref


def build(spec: TensorEnvSpec, num_envs: int, device: str, seed: int):
    """The env of ``spec``, checked against the contract; the user's factory runs only here (what it raises is
    said as the env's, in one line)."""
    from zoo.rollout_guard import env_error

    try:
        if spec.factory:
            factory = _load_factory(spec.factory)
            kwargs = {"num_envs": num_envs, "device": device, "seed": seed}
            if "video_dir" in inspect.signature(factory).parameters:
                kwargs["video_dir"] = spec.video_dir
            env = factory(**kwargs)
        else:
            cls = spec.task_class()
            env = cls(
                num_envs=num_envs, device=device, seed=seed, cfgs=spec.config(), video_dir=spec.video_dir
            )
    except Exception as exc:  # noqa: BLE001 - the user's factory (or the simulator) failed: its error, not zoo's
        raise env_error(
            exc,
            f"the env ({spec.where})",
            f"{spec.factory or spec.env_id}(num_envs={num_envs}, device={device!r}, seed={seed})",
        ) from None
    check_env(env, num_envs, device, spec.where)
    return env


def reseeds(env: Any) -> bool:
    """Whether ``env`` can be kept across evaluations: it restores a fresh build's state with ``reseed``."""
    return callable(getattr(env, "reseed", None))


def check_env(env: Any, num_envs: int, device: str, where: str) -> None:
    """Refuse an env that misses the contract's attributes or methods, in one line naming what."""
    missing = [
        name
        for name in ("num_envs", "num_actions", "device", "get_observations", "step")
        if not hasattr(env, name)
    ]
    if missing:
        raise ZooError(
            f"{where} returned a {type(env).__name__} without {', '.join(missing)}",
            hint="return a batched tensor env (rsl_rl VecEnv shape: docs/tensor-envs.md)",
        )
    if int(env.num_envs) != num_envs:
        raise ZooError(
            f"{where} built {env.num_envs} envs, {num_envs} were asked for",
            hint="build num_envs envs, as the factory is called with",
        )
    if not same_device(env.device, device):
        raise ZooError(
            f"{where} runs on {env.device}, the evaluation on {device}",
            hint=f"build the env on the device passed to the factory, or pass --device {env.device}",
        )


def same_device(a: Any, b: Any) -> bool:
    """``cuda`` and ``cuda:0`` are the same device when 0 is the current one."""
    import torch

    da, db = torch.device(str(a)), torch.device(str(b))
    if da.type != db.type:
        return False
    if da.type != "cuda":
        return True
    current = torch.cuda.current_device() if torch.cuda.is_available() else 0
    return (da.index if da.index is not None else current) == (db.index if db.index is not None else current)


def as_groups(obs: Any) -> dict[str, Any]:
    """The observation as ``{group: tensor}``: a mapping (or ``TensorDict``) by key, a bare tensor as ``policy``."""
    return dict(obs.items()) if hasattr(obs, "items") else {DEFAULT_GROUP: obs}


def box_group(groups: dict[str, Any]) -> str:
    """The group a policy with one flat (Box) observation reads: ``policy``, else the env's only group."""
    return DEFAULT_GROUP if DEFAULT_GROUP in groups or len(groups) != 1 else next(iter(groups))


def observation_groups(obs: Any, device: str, where: str) -> dict[str, Any]:
    """:func:`as_groups`, every tensor checked to be a torch tensor on ``device``."""
    import torch

    groups = as_groups(obs)
    for name, value in groups.items():
        if not isinstance(value, torch.Tensor):
            raise ZooError(
                f"{where}: observation {name!r} is a {type(value).__module__}.{type(value).__name__}, "
                "not a torch tensor",
                hint="a tensor env returns torch tensors on its device (torch.as_tensor(x, device=...))",
            )
        if not same_device(value.device, device):
            raise ZooError(
                f"{where}: observation {name!r} is on {value.device}, the env on {device}",
                hint="return every tensor on the env's device",
            )
    return groups


def check_fit(groups: dict[str, Any], observation_space: Any, where: str) -> None:
    """Refuse a first observation whose groups or sizes differ from what the policy reads, in one line."""
    from gymnasium.spaces import Dict, flatdim

    wanted = dict(observation_space.spaces) if isinstance(observation_space, Dict) else None
    if wanted is None:
        wanted = {box_group(groups): observation_space}
    for name, space in wanted.items():
        if name not in groups:
            raise ZooError(
                f"{where}: the policy reads the observation group {name!r}, the env gives {sorted(groups)}",
                hint="check the env (or --env-factory) against the run's obs_groups",
            )
        got = groups[name]
        size = int(got[0].numel()) if got.ndim > 1 else 1
        if size != flatdim(space):
            raise ZooError(
                f"{where}: observation {name!r} has {size} values per env, the policy reads {flatdim(space)}",
                hint="check that the env is the one the policy was trained on",
            )


def check_step(result: Any, num_envs: int, device: str, where: str) -> None:
    """Refuse a first ``step()`` result that is not ``(obs, rewards, dones, extras)`` of tensors on ``device``."""
    import torch

    if not isinstance(result, tuple | list) or len(result) != 4:
        size = len(result) if isinstance(result, tuple | list) else type(result).__name__
        raise ZooError(
            f"{where}: step() returned {size} values, expected (obs, rewards, dones, extras)",
            hint="follow rsl_rl's VecEnv.step (docs/tensor-envs.md)",
        )
    _obs, rewards, dones, extras = result
    for name, value in (("rewards", rewards), ("dones", dones)):
        if not isinstance(value, torch.Tensor):
            raise ZooError(
                f"{where}: step() {name} is a {type(value).__module__}.{type(value).__name__}, "
                "not a torch tensor",
                hint="return torch tensors on the env's device",
            )
        if not same_device(value.device, device):
            raise ZooError(
                f"{where}: step() {name} is on {value.device}, the env on {device}",
                hint="return every tensor on the env's device",
            )
        if value.reshape(-1).shape[0] != num_envs:
            raise ZooError(
                f"{where}: step() {name} has shape {tuple(value.shape)}, expected ({num_envs},)",
                hint="one value per env",
            )
    if not isinstance(extras, Mapping):
        raise ZooError(
            f"{where}: step() extras is a {type(extras).__name__}, expected a dict",
            hint="return a dict (with 'time_outs')",
        )
