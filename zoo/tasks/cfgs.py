"""Genesis' ``cfgs.pkl``: read without running it, and told which of zoo's tasks it describes.

Genesis' example training scripts (``examples/locomotion/go2_train.py``, ``examples/drone/hover_train.py``)
pickle ``[env_cfg, obs_cfg, reward_cfg, command_cfg, train_cfg]``, five plain dicts, beside the
checkpoints. No class is ever in it, so it is decoded with zoo's restricted unpickler and an empty
allowlist: a pickle asking for any global is refused, naming it, before any of it runs. The task is
recognised from the dicts' keys and values alone; nothing here imports Genesis or torch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zoo.artifacts import limits
from zoo.artifacts.restricted_pickle import checked_loads
from zoo.errors import BrokenFile

#: The list's entries, in the order the training scripts pickle them.
CFG_NAMES = ("env_cfg", "obs_cfg", "reward_cfg", "command_cfg", "train_cfg")
#: The Go2's actuated joints (``urdf/go2/urdf/go2.urdf`` of Genesis' assets), whatever order a cfg lists them in.
GO2_JOINT_NAMES = frozenset(
    f"{leg}_{part}_joint" for leg in ("FR", "FL", "RR", "RL") for part in ("hip", "thigh", "calf")
)
#: env_cfg keys only the drone hover env reads.
HOVER_KEYS = frozenset(
    {"at_target_threshold", "termination_if_close_to_ground", "termination_if_z_greater_than"}
)

GO2_WALKING = "Genesis-Go2Walking-v0"
DRONE_HOVER = "Genesis-DroneHover-v0"


def read_cfgs(path: str | Path) -> list[dict[str, Any]]:
    """The five config dicts of a Genesis ``cfgs.pkl``; one-line errors for a file that is anything else."""
    path = Path(path)
    raw = limits.read_pickle_file(path, "a pickled config")
    data = checked_loads(
        raw, (), path, unknown_hint="zoo decodes cfgs.pkl only when it holds plain dicts, lists and numbers"
    )
    if (
        not isinstance(data, list)
        or len(data) != len(CFG_NAMES)
        or not all(isinstance(d, dict) for d in data)
    ):
        raise BrokenFile(
            f"{path}: expected Genesis' list of 5 config dicts [{', '.join(CFG_NAMES)}], got {_shape(data)}",
            hint="point zoo at the cfgs.pkl a Genesis *_train.py script wrote",
        )
    return data


def _shape(data: Any) -> str:
    if isinstance(data, list | tuple):
        kinds = sorted({type(d).__name__ for d in data})
        return f"a {type(data).__name__} of {len(data)} ({', '.join(kinds) or 'empty'})"
    return f"a {type(data).__name__}"


def joint_names(env_cfg: dict[str, Any]) -> Any:
    """The policy's joint order: ``joint_names`` (Genesis >= 0.3.0), ``dof_names`` before."""
    return env_cfg.get("joint_names", env_cfg.get("dof_names"))


def recognize(cfgs: list[dict[str, Any]]) -> str | None:
    """The id of the task (:data:`zoo.tensor_env.TASKS`) that ``cfgs`` configures, None when it is neither."""
    env_cfg = cfgs[0] if cfgs and isinstance(cfgs[0], dict) else {}
    num_actions = env_cfg.get("num_actions")
    names = joint_names(env_cfg)
    if num_actions == 12 and isinstance(names, list) and set(names) == GO2_JOINT_NAMES:
        return GO2_WALKING
    if num_actions == 4 and env_cfg.keys() >= HOVER_KEYS:
        return DRONE_HOVER
    return None


def describe_unknown(cfgs: list[dict[str, Any]]) -> str:
    """What a cfgs list holds, in a few words for an error line: its action count and env_cfg keys."""
    env_cfg = cfgs[0] if cfgs and isinstance(cfgs[0], dict) else {}
    keys = sorted(str(k) for k in env_cfg)
    shown = ", ".join(keys[:8]) + (f", ... ({len(keys)} keys)" if len(keys) > 8 else "")
    return f"num_actions {env_cfg.get('num_actions')!r}, env_cfg keys: {shown or 'none'}"
