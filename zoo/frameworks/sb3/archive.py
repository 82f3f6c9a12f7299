"""Read an SB3 ``.zip`` without executing it: central directory, version, ``data`` JSON, weights.

SB3's ``save`` writes ``data`` (JSON; values JSON cannot hold are base64 cloudpickle under
``":serialized:"``), ``policy.pth`` (the policy's state dict), optimizer states,
``pytorch_variables.pth``, ``_stable_baselines3_version`` and ``system_info.txt``. Only the
values needed to rebuild the policy are decoded, each with the restricted unpickler: an old
``lr_schedule`` is cloudpickled code and is never touched.
"""

from __future__ import annotations

import base64
import json
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zoo.errors import RefusedError, ZooError

REQUIRED = ("data", "policy.pth")
#: rl_zoo3's CheckpointCallback names: the model, and its statistics beside it.
CHECKPOINT = re.compile(r"^rl_model_(\d+)_steps\.zip$")
ALGORITHMS = ("PPO", "A2C", "DQN", "SAC", "TD3", "DDPG")
#: Keys SB3's own load drops from the saved policy kwargs (the device is the evaluator's choice).
_POLICY_KWARGS_DROPPED = ("device",)


class NotSB3(ZooError):
    """The file is a zip, but not one SB3's ``save`` wrote."""


def is_sb3_zip(path: Path) -> bool:
    """True when the zip's central directory lists ``data`` and ``policy.pth`` (nothing is decompressed)."""
    try:
        with zipfile.ZipFile(path) as zf:
            names = set(zf.namelist())
    except (zipfile.BadZipFile, OSError):
        return False
    return all(name in names for name in REQUIRED)


@dataclass
class SB3Archive:
    """What an SB3 zip says about itself, read without unpickling anything."""

    path: Path
    data: dict[str, Any]
    version: str | None = None
    system_info: str | None = None
    algorithm: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def num_timesteps(self) -> int | None:
        value = self.data.get("num_timesteps")
        return value if isinstance(value, int) else None

    @property
    def policy_class_name(self) -> str | None:
        """``module.Class`` the pickled ``policy_class`` refers to (an opcode scan: nothing is built)."""
        from zoo.artifacts.pickles import PickleTruncated, scan_globals

        entry = self.data.get("policy_class")
        if not isinstance(entry, dict):
            return None
        try:
            found = scan_globals(base64.b64decode(entry.get(":serialized:", "")))
        except (PickleTruncated, ValueError):
            found = []
        return f"{found[0][0]}.{found[0][1]}" if len(found) == 1 else entry.get("__module__")

    @property
    def saved_with(self) -> dict[str, str]:
        """``system_info.txt`` (SB3 >= 1.2) as ``{"Python": "3.11.9", "PyTorch": ...}``."""
        pairs = (line.lstrip("- ").partition(": ") for line in (self.system_info or "").splitlines())
        return {key.strip(): value.strip() for key, sep, value in pairs if sep and key.strip()}


def read_archive(path: Path) -> SB3Archive:
    """Central directory, version files and the ``data`` JSON; a clear error for anything else."""
    try:
        with zipfile.ZipFile(path) as zf:
            members = zf.namelist()
            missing = [name for name in REQUIRED if name not in members]
            if missing:
                raise NotSB3(f"{path}: not a Stable-Baselines3 model (the zip has no {', '.join(missing)})")
            raw = zf.read("data")
            version = _text(zf, "_stable_baselines3_version", members)
            system_info = _text(zf, "system_info.txt", members)
    except zipfile.BadZipFile:
        raise ZooError(
            f"{path}: zip archive is cut short or corrupt", hint="re-save or re-download it"
        ) from None
    except OSError as exc:
        raise ZooError(f"{path}: cannot read: {exc}") from None
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ZooError(f"{path}: the zip's data file is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ZooError(f"{path}: the zip's data file is not a JSON object")
    archive = SB3Archive(path, data, version, system_info)
    archive.algorithm = infer_algorithm(archive)
    return archive


def _text(zf: zipfile.ZipFile, name: str, members: list[str]) -> str | None:
    return zf.read(name).decode("utf-8", "replace").strip() if name in members else None


def infer_algorithm(archive: SB3Archive) -> str | None:
    """PPO/A2C/DQN/SAC/TD3/DDPG from the policy class and the keys only that algorithm saves."""
    name = archive.policy_class_name or ""
    data = archive.data
    if name.startswith("stable_baselines3.dqn."):
        return "DQN"
    if name.startswith("stable_baselines3.sac."):
        return "SAC"
    if name.startswith("stable_baselines3.td3."):
        # DDPG is TD3 with policy_delay=1 and no target policy smoothing.
        ddpg = data.get("policy_delay") == 1 and data.get("target_noise_clip") == 0.0
        return "DDPG" if ddpg else "TD3"
    if name.startswith("stable_baselines3.common.policies."):
        return "PPO" if "clip_range" in data else "A2C"
    return None


def decode(archive: SB3Archive, key: str) -> Any:
    """One value of ``data``: plain JSON as is, ``":serialized:"`` through the restricted unpickler."""
    from zoo.artifacts.restricted_pickle import RefusedGlobal, restricted_loads
    from zoo.frameworks.sb3.allowlist import ALLOWED

    if key not in archive.data:
        raise ZooError(f"{archive.path}: the zip's data has no {key!r}", hint="is this an SB3 model?")
    value = archive.data[key]
    if not (isinstance(value, dict) and ":serialized:" in value):
        return value
    try:
        return restricted_loads(base64.b64decode(value[":serialized:"]), ALLOWED)
    except RefusedGlobal as exc:
        if exc.module.split(".")[0] == "gym" and key in ("observation_space", "action_space"):
            return _gym_space(archive, key, value)
        raise RefusedError(
            f"{archive.path}: data[{key!r}] refers to {exc.qualname}, which zoo does not unpickle",
            hint="only if you trust the file, pass --trust-pickle to use SB3's own load",
        ) from None
    except Exception as exc:  # noqa: BLE001 - a broken pickle is a finding, not a crash
        raise ZooError(f"{archive.path}: data[{key!r}] does not decode: {exc}") from None


def _gym_space(archive: SB3Archive, key: str, value: dict) -> Any:
    """An OpenAI Gym space (SB3 < 2.0) rebuilt from its JSON summary, never by importing gym."""
    from zoo.frameworks.sb3.gymspaces import space_from_summary

    try:
        space = space_from_summary(value)
    except ValueError as exc:
        raise RefusedError(f"{archive.path}: data[{key!r}] is an OpenAI Gym space (SB3 < 2.0): {exc}",
                       hint="with gym and shimmy installed, --trust-pickle uses SB3's own load") from None  # fmt: skip
    archive.notes.append(f"{key}: OpenAI Gym space rebuilt from data's JSON summary")
    return space


def policy_kwargs(archive: SB3Archive) -> dict[str, Any]:
    """The policy kwargs as SB3 2.x wants them (the same conversions as ``BaseAlgorithm.load``)."""
    kwargs = dict(decode(archive, "policy_kwargs") or {}) if "policy_kwargs" in archive.data else {}
    for key in _POLICY_KWARGS_DROPPED:
        kwargs.pop(key, None)
    net_arch = kwargs.get("net_arch")
    if isinstance(net_arch, list) and net_arch and isinstance(net_arch[0], dict):
        kwargs["net_arch"] = net_arch[0]
        archive.notes.append("net_arch in the SB3 < 1.8 form [dict(pi=..., vf=...)] converted")
    return kwargs


def load_weights(archive: SB3Archive) -> dict[str, Any]:
    """``policy.pth`` through ``torch.load(weights_only=True)``: tensors only, no code."""
    import pickle

    import torch

    try:
        with zipfile.ZipFile(archive.path) as zf, zf.open("policy.pth") as fh:
            state = torch.load(fh, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, OSError, zipfile.BadZipFile) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        if "weights_only" in str(exc) or "Unsupported global" in str(exc):
            raise RefusedError(f"{archive.path}: policy.pth does not load with weights_only=True: {first}",
                               hint="only if you trust the file, pass --trust-pickle") from None  # fmt: skip
        raise ZooError(
            f"{archive.path}: policy.pth does not load: {first}", hint="re-save or re-download it"
        ) from None
    if not isinstance(state, dict):
        raise ZooError(f"{archive.path}: policy.pth holds {type(state).__name__}, not a state dict")
    return state
