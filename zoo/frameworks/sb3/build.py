"""Rebuild the SB3 policy from a zip's ``data`` and ``policy.pth``, without SB3's ``load``.

``policy_class(observation_space, action_space, lr_schedule, **policy_kwargs)`` is what each
algorithm's ``_setup_model`` calls (the on-policy ones add ``use_sde`` from the top level of
``data``; ARS passes no schedule); the weights then come from ``torch.load(weights_only=True)``.
``--trust-pickle`` hands a file the safe path refuses to SB3's (or sb3-contrib's) own ``{Algo}.load``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zoo.errors import BrokenFile, RefusedError, UnsupportedError, ZooError
from zoo.frameworks.sb3.archive import CONTRIB, SB3Archive, decode, load_weights, policy_kwargs

#: SB3 < 1.7 A2C/PPO policies had no separate actor/critic extractors; with a shared extractor
#: these keys are aliases of ``features_extractor.*`` (SB3's own load relaxes exact_match for them).
_SHARED_EXTRACTOR_PREFIXES = ("pi_features_extractor.", "vf_features_extractor.")
#: The algorithms whose ``_setup_model`` passes ``use_sde=self.use_sde`` to the policy class.
_TAKES_USE_SDE = ("PPO", "A2C", "TRPO", "RecurrentPPO")


@dataclass
class Rebuilt:
    """An SB3 policy module with the spaces and settings it was saved with."""

    policy: Any
    observation_space: Any
    action_space: Any
    exploration_rate: float  # DQN's epsilon at save time (stochastic mode)


def _constant(_progress: float) -> float:
    return 0.0


def _check_state(policy, state: dict) -> None:
    """Load ``state``; only the known SB3 < 1.7 aliases may be missing."""
    try:
        result = policy.load_state_dict(state, strict=False)
    except RuntimeError as exc:
        # torch's first line only says "Error(s) in loading state_dict"; the second names the tensor.
        lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
        detail = lines[1] if len(lines) > 1 else lines[0]
        raise BrokenFile(f"policy.pth does not fit the policy rebuilt from data: {detail}") from None
    missing = [k for k in result.missing_keys if not k.startswith(_SHARED_EXTRACTOR_PREFIXES)]
    if missing or result.unexpected_keys:
        what = f"missing {missing[0]}" if missing else f"unexpected {result.unexpected_keys[0]}"
        raise BrokenFile(f"policy.pth does not fit the policy rebuilt from data: {what}")


def missing_contrib(archive: SB3Archive) -> UnsupportedError | None:
    """An sb3-contrib model where sb3-contrib is not installed (its policy classes live there)."""
    from importlib.util import find_spec

    if archive.algorithm in CONTRIB and find_spec("sb3_contrib") is None:
        return UnsupportedError(
            f"{archive.algorithm} models need sb3-contrib, which is not installed",
            hint="install the sb3 extra: pip install 'rl-zoo-hub[sb3]'",
        )
    return None


def rebuild(archive: SB3Archive, device: str = "cpu") -> Rebuilt:
    """The policy from ``data`` and ``policy.pth`` through the restricted unpickler only."""
    from gymnasium import spaces
    from stable_baselines3.common.policies import BasePolicy

    missing = missing_contrib(archive)
    if missing:
        raise missing
    policy_class = decode(archive, "policy_class")
    if not (isinstance(policy_class, type) and issubclass(policy_class, BasePolicy)):
        raise BrokenFile(f"{archive.path}: data['policy_class'] is not an SB3 policy class")
    observation_space, action_space = decode(archive, "observation_space"), decode(archive, "action_space")
    acting = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)  # SB3's distributions
    if not isinstance(observation_space, spaces.Space) or not isinstance(action_space, acting):
        raise BrokenFile(
            f"{archive.path}: data's observation_space or action_space is not a space SB3 acts in"
        )
    kwargs = policy_kwargs(archive)
    if archive.algorithm in _TAKES_USE_SDE:
        kwargs.setdefault("use_sde", bool(archive.data.get("use_sde", False)))
    schedule = () if archive.algorithm == "ARS" else (_constant,)  # ARS's policies take no schedule
    try:
        policy = policy_class(observation_space, action_space, *schedule, **kwargs)
    except Exception as exc:  # noqa: BLE001 - SB3's constructors meet values from a file: any failure is one line
        raise BrokenFile(
            f"{archive.path}: cannot rebuild {policy_class.__name__} from data: "
            f"{type(exc).__name__}: {str(exc)[:120]}"
        ) from None
    _check_state(policy, load_weights(archive))
    policy = policy.to(device)
    policy.set_training_mode(False)
    return Rebuilt(policy, observation_space, action_space, _epsilon(archive))


def _epsilon(archive: SB3Archive) -> float:
    value = archive.data.get("exploration_rate", 0.0)
    return float(value) if isinstance(value, int | float) else 0.0


def sb3_load(archive: SB3Archive, device: str = "cpu") -> Rebuilt:
    """SB3's (or sb3-contrib's) own ``{Algo}.load`` (full cloudpickle): only for a file the user trusts."""
    import importlib

    if archive.algorithm is None:
        raise ZooError(f"{archive.path}: cannot tell which SB3 algorithm saved it")
    library = "sb3_contrib" if archive.algorithm in CONTRIB else "stable_baselines3"
    algo = getattr(importlib.import_module(library), archive.algorithm)
    try:
        model = algo.load(archive.path, device=device)
    except Exception as exc:  # noqa: BLE001 - SB3's load fails in many ways; one line for the user
        raise ZooError(f"{archive.path}: SB3's load failed: {type(exc).__name__}: {exc}") from None
    model.policy.set_training_mode(False)
    epsilon = float(getattr(model, "exploration_rate", 0.0) or 0.0)
    return Rebuilt(model.policy, model.observation_space, model.action_space, epsilon)


def load(archive: SB3Archive, *, device: str, trust_pickle: bool) -> Rebuilt:
    """The restricted rebuild; SB3's own load only when it refused and the user trusts the file."""
    try:
        return rebuild(archive, device)
    except RefusedError:
        if not trust_pickle:
            raise
        return sb3_load(archive, device)
