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

from zoo.artifacts import limits
from zoo.errors import BrokenFile, RefusedError, ZooError

REQUIRED = ("data", "policy.pth")
#: SB3's ``CheckpointCallback`` names: ``{name_prefix}_{num_timesteps}_steps.zip`` (rl_zoo3's prefix is
#: ``rl_model``), its statistics beside it (:func:`checkpoint_stats_name`).
CHECKPOINT = re.compile(r"^(?P<prefix>.+)_(?P<steps>\d+)_steps\.zip$")


def checkpoint_stats_name(match: re.Match) -> str:
    """The VecNormalize snapshot ``CheckpointCallback(save_vecnormalize=True)`` writes with a checkpoint."""
    return f"{match['prefix']}_vecnormalize_{match['steps']}_steps.pkl"


#: Each algorithm zoo reads, by the class name SB3 / sb3-contrib give it, and its rl_zoo3 name (the
#: ``logs/{algo}/`` folder, the hub's ``{algo}-{env_id}``, and ``sb3_{algo}`` in zoo's registry).
ZOO_NAMES = {
    "PPO": "ppo",
    "A2C": "a2c",
    "DQN": "dqn",
    "SAC": "sac",
    "TD3": "td3",
    "DDPG": "ddpg",
    "QRDQN": "qrdqn",
    "TQC": "tqc",
    "TRPO": "trpo",
    "ARS": "ars",
    "CrossQ": "crossq",
    "RecurrentPPO": "ppo_lstm",
    "MaskablePPO": "ppo_mask",
}
ALGORITHMS = tuple(ZOO_NAMES)
#: The algorithms that live in sb3-contrib (``import sb3_contrib``), not in stable_baselines3.
CONTRIB = ("QRDQN", "TQC", "TRPO", "ARS", "CrossQ", "RecurrentPPO", "MaskablePPO")
#: The policy module each algorithm's policy classes come from (TRPO uses SB3's ActorCriticPolicy).
_POLICY_MODULES = {
    "stable_baselines3.dqn.": "DQN",
    "stable_baselines3.sac.": "SAC",
    "stable_baselines3.td3.": "TD3",
    "sb3_contrib.qrdqn.": "QRDQN",
    "sb3_contrib.tqc.": "TQC",
    "sb3_contrib.ars.": "ARS",
    "sb3_contrib.crossq.": "CrossQ",
    "sb3_contrib.common.recurrent.": "RecurrentPPO",
    "sb3_contrib.common.maskable.": "MaskablePPO",
}
#: The hint of every refusal: what zoo cannot check, it does not load (docs/frameworks/sb3.md says more).
#: What zoo says about a pickled value naming a class outside the allowlist (never "pass --trust-pickle").
UNKNOWN_HINT = "zoo rebuilds only what SB3 itself saves; see docs/frameworks/sb3.md"
#: Keys SB3's own load drops from the saved policy kwargs (the device is the evaluator's choice).
_POLICY_KWARGS_DROPPED = ("device",)


class NotSB3(ZooError):
    """The file is a zip, but not one SB3's ``save`` wrote."""


def is_sb3_zip(path: Path) -> bool:
    """True when the zip's central directory lists ``data`` and ``policy.pth`` (nothing is decompressed)."""
    try:
        with zipfile.ZipFile(path) as zf:
            names = set(zf.namelist())
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError):
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
        from zoo.artifacts.pickles import scan_pickles

        entry = self.data.get("policy_class")
        if not isinstance(entry, dict):
            return None
        try:
            scan = scan_pickles(base64.b64decode(str(entry.get(":serialized:", ""))))
        except ValueError:
            return None
        found = scan.globals if scan.complete else []
        module = entry.get("__module__")
        return (
            f"{found[0][0]}.{found[0][1]}" if len(found) == 1 else module if isinstance(module, str) else None
        )

    @property
    def saved_with(self) -> dict[str, str]:
        """``system_info.txt`` (SB3 >= 1.2) as ``{"Python": "3.11.9", "PyTorch": ...}``."""
        pairs = (line.lstrip("- ").partition(": ") for line in (self.system_info or "").splitlines())
        return {key.strip(): value.strip() for key, sep, value in pairs if sep and key.strip()}


def read_archive(path: Path) -> SB3Archive:
    """Central directory, every entry's CRC-32, the version files and the ``data`` JSON; one clear error else.

    Every entry is read (bounded: a zip bomb is refused by its declared size and ratio before it is
    inflated), so a corrupted archive is found here, not halfway through an eval.
    """
    try:
        with zipfile.ZipFile(path) as zf:
            members = zf.namelist()
            missing = [name for name in REQUIRED if name not in members]
            if missing:
                raise NotSB3(
                    f"{path}: not a Stable-Baselines3 model (the zip has no {', '.join(missing)})",
                    hint="is this a model SB3's save wrote? re-save or re-download it",
                )
            if len(members) != len(set(members)):
                raise ZooError(f"{path}: the zip lists an entry twice", hint="re-save or re-download it")
            texts = {
                name: read_entry(zf, path, name, limits.MAX_TEXT_BYTES)
                for name in ("data", "_stable_baselines3_version", "system_info.txt")
                if name in members
            }
            for name in members:
                if name not in texts:
                    read_entry(zf, path, name, limits.MAX_ENTRY_BYTES, keep=False)
    except zipfile.BadZipFile:
        raise ZooError(
            f"{path}: zip archive is cut short or corrupt", hint="re-save or re-download it"
        ) from None
    except (OSError, ValueError, EOFError, zipfile.LargeZipFile) as exc:
        raise BrokenFile(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        data = json.loads(texts["data"])
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise BrokenFile(f"{path}: the zip's data file is not JSON ({str(exc)[:100]})") from None
    if not isinstance(data, dict):
        raise BrokenFile(f"{path}: the zip's data file is not a JSON object")
    version, system_info = (
        texts[n].decode("utf-8", "replace").strip() if n in texts else None
        for n in ("_stable_baselines3_version", "system_info.txt")
    )
    archive = SB3Archive(path, data, version, system_info)
    archive.algorithm = infer_algorithm(archive)
    return archive


def read_entry(zf: zipfile.ZipFile, path: Path, name: str, cap: int, keep: bool = True) -> bytes:
    """:func:`zoo.artifacts.limits.read_entry`, its problems one error naming the zip."""
    try:
        return limits.read_entry(zf, zf.getinfo(name), cap, keep)
    except limits.EntryProblem as exc:
        hint = (
            "this is not a model SB3 saved; do not load it" if exc.over_bound else "re-save or re-download it"
        )
        raise ZooError(f"{path}: {exc}", hint=hint) from None


def exp_name_for(algorithm: str | None) -> str | None:
    """The registry entry of an algorithm: ``sb3_ppo``, ``sb3_ppo_lstm``... (never CleanRL's names)."""
    return f"sb3_{ZOO_NAMES[algorithm]}" if algorithm in ZOO_NAMES else None


def infer_algorithm(archive: SB3Archive) -> str | None:
    """One of :data:`ALGORITHMS` from the policy class and the keys only that algorithm saves."""
    name = archive.policy_class_name or ""
    data = archive.data
    algorithm = next((algo for module, algo in _POLICY_MODULES.items() if name.startswith(module)), None)
    if algorithm == "TD3":
        # DDPG is TD3 with policy_delay=1 and no target policy smoothing.
        ddpg = data.get("policy_delay") == 1 and data.get("target_noise_clip") == 0.0
        return "DDPG" if ddpg else "TD3"
    if name.startswith("stable_baselines3.common.policies."):
        # PPO, A2C and TRPO share ActorCriticPolicy: PPO saves clip_range, TRPO its conjugate-gradient settings.
        return "PPO" if "clip_range" in data else "TRPO" if "cg_max_steps" in data else "A2C"
    return algorithm


def decode(archive: SB3Archive, key: str) -> Any:
    """One value of ``data``: plain JSON as is, ``":serialized:"`` through the restricted unpickler.

    The pickle is scanned first, so that a value naming a global that runs code is called unsafe, not
    merely "not on the allowlist".
    """
    from zoo.artifacts.restricted_pickle import UnknownGlobal, checked_loads
    from zoo.frameworks.sb3.allowlist import ALLOWED

    if key not in archive.data:
        raise ZooError(f"{archive.path}: the zip's data has no {key!r}", hint="is this an SB3 model?")
    value = archive.data[key]
    if not (isinstance(value, dict) and ":serialized:" in value):
        return value
    try:
        raw = base64.b64decode(str(value[":serialized:"]), validate=False)
    except ValueError:
        raise BrokenFile(f"{archive.path}: data[{key!r}] is not base64") from None
    try:
        return checked_loads(raw, ALLOWED, archive.path, unknown_hint=UNKNOWN_HINT, part=f"data[{key!r}]")
    except UnknownGlobal as exc:
        if exc.module.split(".")[0] == "gym" and key in ("observation_space", "action_space"):
            return _gym_space(archive, key, value)
        raise


def _gym_space(archive: SB3Archive, key: str, value: dict) -> Any:
    """An OpenAI Gym space (SB3 < 2.0) rebuilt from its JSON summary, never by importing gym."""
    from zoo.frameworks.sb3.gymspaces import space_from_summary

    try:
        space = space_from_summary(value)
    except ValueError as exc:
        raise RefusedError(
            f"{archive.path}: data[{key!r}] is an OpenAI Gym space (SB3 < 2.0): {exc}",
            hint="with gym and shimmy installed, --trust-pickle uses SB3's own load",
        ) from None
    archive.notes.append(f"{key}: OpenAI Gym space rebuilt from data's JSON summary")
    return space


def policy_kwargs(archive: SB3Archive) -> dict[str, Any]:
    """The policy kwargs as SB3 2.x wants them (the same conversions as ``BaseAlgorithm.load``)."""
    decoded = decode(archive, "policy_kwargs") if "policy_kwargs" in archive.data else None
    if decoded is not None and not isinstance(decoded, dict):
        raise BrokenFile(f"{archive.path}: data['policy_kwargs'] is a {type(decoded).__name__}, not a dict")
    kwargs = dict(decoded or {})
    for key in _POLICY_KWARGS_DROPPED:
        kwargs.pop(key, None)
    net_arch = kwargs.get("net_arch")
    if isinstance(net_arch, list) and net_arch and isinstance(net_arch[0], dict):
        kwargs["net_arch"] = net_arch[0]
        archive.notes.append("net_arch in the SB3 < 1.8 form [dict(pi=..., vf=...)] converted")
    return kwargs


def load_weights(archive: SB3Archive) -> dict[str, Any]:
    """``policy.pth`` after the same verification as any torch file, then ``torch.load(weights_only=True)``."""
    import io

    from zoo.artifacts.pickles import UNSAFE_HINT
    from zoo.artifacts.torchfile import inspect_torch_bytes, refuse_unsafe, torch_load

    label = archive.path / "policy.pth"
    try:
        with zipfile.ZipFile(archive.path) as zf:
            raw = read_entry(zf, archive.path, "policy.pth", limits.MAX_ENTRY_BYTES)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
        raise BrokenFile(f"{archive.path}: cannot read policy.pth: {str(exc)[:100]}") from None
    info = inspect_torch_bytes(raw, label)
    try:
        refuse_unsafe(info, trust_pickle=False)
    except RefusedError as exc:
        raise RefusedError(exc.message, UNSAFE_HINT if info.dangerous else UNKNOWN_HINT) from None
    if info.problem:
        raise ZooError(f"{label}: {info.problem}", hint="re-save or re-download it")
    try:
        state = torch_load(io.BytesIO(raw))
    except ZooError as exc:
        raise ZooError(f"{archive.path}: policy.pth does not load: {exc.message}", exc.hint) from None
    if not isinstance(state, dict):
        raise BrokenFile(f"{archive.path}: policy.pth holds {type(state).__name__}, not a state dict")
    return state
