"""rsl_rl checkpoint files across library versions, read as one policy's state dict in 5.x names.

What ``OnPolicyRunner.save`` writes (read from each version's source):

- 5.x, PPO: ``{actor_state_dict, critic_state_dict, optimizer_state_dict, iter, infos}``; the actor is an
  ``MLPModel``/``RNNModel``/``CNNModel``: ``obs_normalizer.{_mean,_var,_std,count}``, ``mlp.{i}.*``,
  ``distribution.{std_param|log_std_param}``, ``rnn.rnn.*``, ``cnns.{group}.{i}.*``.
- 5.x, Distillation: ``{student_state_dict, teacher_state_dict, optimizer_state_dict, iter, infos}``, the
  student and teacher being such models. The policy is the student; the teacher reads privileged
  observations a deployment does not have, so it is never loaded.
- 3.x: ``{model_state_dict, optimizer_state_dict, iter, infos}`` of an ``ActorCritic[Recurrent]``:
  ``actor.{i}.*``, ``std``/``log_std``, ``actor_obs_normalizer.*``, ``memory_a.rnn.*``, and the critic's
  ``critic.*``, ``critic_obs_normalizer.*``, ``memory_c.*``; Distillation saves a
  ``StudentTeacher[Recurrent]`` there: ``student.*``, ``student_obs_normalizer.*``, ``memory_s.*``,
  ``teacher.*``, ``teacher_obs_normalizer.*``, ``memory_t.*``.
- 2.x (Genesis' examples pin 2.2.4): the same ``model_state_dict`` without a normalizer inside; the
  runner's own ``EmpiricalNormalization`` of the policy's observations is ``obs_norm_state_dict``
  beside it (``critic_obs_norm_state_dict``, or ``privileged_obs_norm_state_dict`` in 2.3, is the
  critic's or teacher's).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from zoo.errors import LayoutMismatch

#: The 5.x checkpoint key of each policy role: the PPO actor, or the distilled student.
_MODERN = {"actor_state_dict": "actor", "student_state_dict": "student"}
#: Old module prefix -> 5.x prefix, per role (checked in order: the normalizer prefixes first).
_LEGACY_PREFIXES = {
    "actor": (("actor_obs_normalizer.", "obs_normalizer."), ("memory_a.", "rnn."), ("actor.", "mlp.")),
    "student": (("student_obs_normalizer.", "obs_normalizer."), ("memory_s.", "rnn."), ("student.", "mlp.")),
}
#: What the policy does not need: the critic, or the teacher and its privileged observations.
_LEGACY_DROPPED = (
    "critic.",
    "critic_obs_normalizer.",
    "memory_c.",
    "teacher.",
    "teacher_obs_normalizer.",
    "memory_t.",
)
_LEGACY_PARAMS = {"std": "distribution.std_param", "log_std": "distribution.log_std_param"}


class NotRunnerCheckpoint(LayoutMismatch):
    """The file is not an rsl_rl runner checkpoint zoo can read."""

    default_hint = "is this a model_{iter}.pt of rsl_rl's OnPolicyRunner, next to its own config?"


@dataclass(frozen=True)
class PolicyWeights:
    """The policy's state dict in 5.x names, the file layout it came from, and the policy's role.

    ``role`` is ``actor`` (PPO) or ``student`` (Distillation): the config section (``actor:``/``student:``)
    and the observation set (``obs_groups[role]``) of the policy.
    """

    state: dict[str, Any]
    layout: str
    role: str


def _legacy(checkpoint: Mapping[str, Any]) -> PolicyWeights:
    model = checkpoint["model_state_dict"]
    role = "student" if any(str(k).startswith("student.") for k in model) else "actor"
    state = {}
    for key, value in model.items():
        if key.startswith(_LEGACY_DROPPED):
            continue
        new = _LEGACY_PARAMS.get(key)
        for old, prefix in _LEGACY_PREFIXES[role]:
            if new is None and key.startswith(old):
                new = prefix + key[len(old) :]
        state[new or key] = value
    norm = checkpoint.get("obs_norm_state_dict")
    if isinstance(norm, Mapping):  # rsl-rl-lib 2.x kept the policy's normalizer in the runner
        state.update({f"obs_normalizer.{k}": v for k, v in norm.items()})
    module = "StudentTeacher" if role == "student" else "ActorCritic"
    return PolicyWeights(state, f"model_state_dict (rsl-rl-lib < 4 {module})", role)


def _describe(obj: Any) -> str:
    if isinstance(obj, Mapping):
        return f"a dict with keys {sorted(map(str, obj))[:6]}"
    return f"a {type(obj).__name__}"


def policy_weights(checkpoint: Any) -> PolicyWeights:
    """The policy's weights from a loaded (or statically described) runner checkpoint."""
    if isinstance(checkpoint, Mapping):
        for key, role in _MODERN.items():
            if isinstance(checkpoint.get(key), Mapping):
                return PolicyWeights(dict(checkpoint[key]), key, role)
        if isinstance(checkpoint.get("model_state_dict"), Mapping):
            return _legacy(checkpoint)
    raise NotRunnerCheckpoint(
        "not an rsl_rl checkpoint: expected a dict with 'actor_state_dict', 'student_state_dict' or "
        f"'model_state_dict', this one holds {_describe(checkpoint)}",
        hint="is this a model_{iter}.pt written by rsl_rl's OnPolicyRunner?",
    )
