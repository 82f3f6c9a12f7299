"""Does a model fit an env? The eval env's spaces, compared the way SB3's ``load`` compares them."""

from __future__ import annotations

from typing import Any

#: How to get Stable-Baselines3 (zoo rebuilds SB3 policies with SB3's own classes).
SB3_HINT = "install the sb3 extra: pip install 'rl-zoo-hub[sb3]'"


def fit_problem(model: Any, spaces: tuple) -> str | None:
    """Why the env's ``(observation_space, action_space)`` differ from those ``model`` was saved with."""
    return space_problem(model.observation_space, spaces[0], "observation") or space_problem(
        model.action_space, spaces[1], "action"
    )


def space_problem(model: Any, env: Any, what: str) -> str | None:
    """Why the env's space differs from the one the model was saved with (SB3's own check, shapes only)."""
    from gymnasium import spaces

    if isinstance(model, spaces.Dict):
        if not isinstance(env, spaces.Dict) or set(model.spaces) != set(env.spaces):
            return f"{what} space is {env}, the model was saved with {model}"
        return next(
            (p for k in model.spaces if (p := space_problem(model[k], env[k], f"{what}[{k!r}]"))), None
        )
    if type(model) is not type(env):
        return f"{what} space is {type(env).__name__}, the model was saved with {type(model).__name__}"
    same = model.shape == env.shape
    if isinstance(model, spaces.Box) and len(model.shape) == 3 and not same:
        same = model.shape == (env.shape[2], env.shape[0], env.shape[1])  # SB3's VecTransposeImage
    if isinstance(model, spaces.Discrete | spaces.MultiDiscrete):
        same = same and model == env
    return None if same else f"{what} space is {env}, the model was saved with {model}"
