"""rl_zoo3's run config, applied to the eval env as ``rl_zoo3.enjoy`` applies it, without running it.

rl_zoo3 saves the hyperparameters a run trained with in ``{run}/{env_name}/config.yml`` (a ``yaml.dump``
of an ``OrderedDict``; hub repos hold it at the root) and the ``rl_zoo3.train`` arguments in
``args.yml``. ``rl_zoo3.enjoy`` rebuilds the test env from them (``create_test_env``): the ``env_wrapper``
classes on each env (imported by name), ``env_kwargs`` for ``gym.make`` (``config.yml``'s, replaced by
``args.yml``'s when set), the ``VecNormalize`` statistics when ``normalize`` is set, and ``VecFrameStack``
with ``frame_stack`` frames. rl_zoo3 reads the files with ``yaml.UnsafeLoader`` and ``eval``s the
``normalize`` and ``policy_kwargs`` strings; zoo reads them with :func:`zoo.safeyaml.read` (only the
``OrderedDict`` tag is built) and parses those strings with :func:`literal`, which evaluates nothing.

Wrapper classes come from :data:`zoo.env_wrappers.ALLOWED`; a class outside it is refused by name unless
the user trusts it. ``policy_kwargs`` needs no applying (the zip's ``data`` holds the kwargs the policy
was built with, which zoo uses); the config's copy is parsed and compared, and a difference is reported.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zoo.env_wrappers import WrapperRef, freeze
from zoo.errors import UnsupportedError, ZooError

#: rl_zoo3's ``hyperparams/*.yml`` ``atari`` section: every SB3 Atari model rl_zoo3 trains has these.
ATARI_WRAPPER = "stable_baselines3.common.atari_wrappers.AtariWrapper"
ATARI_FRAME_STACK = 4
#: zoo's frame stack with VecFrameStack's semantics (see :mod:`zoo.env_wrappers`).
FRAME_STACK_WRAPPER = "zoo.env_wrappers.StackedFrames"


class ConfigProblem(ZooError):
    """A value of ``config.yml`` that zoo cannot apply as rl_zoo3 would."""


@dataclass(frozen=True)
class RunConfig:
    """What a run's config says about its eval env, ready for an :class:`~zoo.envs.EnvSpec`."""

    source: str  # the config file, or why there is none ("rl_zoo3's Atari defaults")
    wrappers: tuple[WrapperRef, ...] = ()  # env_wrapper, in order (frame stacking not included)
    frame_stack: int = 0
    env_kwargs: tuple = ()  # frozen gym.make kwargs
    normalize: dict | None = None  # VecNormalize kwargs when the run normalized, else None
    policy: str | None = None  # "MlpPolicy", "CnnPolicy", ...
    policy_kwargs: dict | None = field(default=None, compare=False)  # parsed, for comparison only
    from_file: bool = True  # False: defaults zoo assumed for a model found without its config

    @property
    def env_wrappers(self) -> tuple[WrapperRef, ...]:
        """The per-env stack: ``env_wrapper``, then VecFrameStack's stacking."""
        if self.frame_stack <= 0:
            return self.wrappers
        return (*self.wrappers, WrapperRef(FRAME_STACK_WRAPPER, (("n_stack", self.frame_stack),)))

    def describe(self) -> dict[str, Any]:
        """For ``zoo check``'s details: what is applied, in the config's terms."""
        return {
            "file": self.source,
            "env_wrapper": [r.to_json() for r in self.wrappers],
            "frame_stack": self.frame_stack,
            "normalize": self.normalize,
            "env_kwargs": dict(self.env_kwargs),
            "policy": self.policy,
        }


def atari_defaults() -> RunConfig:
    """rl_zoo3's Atari hyperparameters, for an Atari model found without its config."""
    return RunConfig(
        "rl_zoo3's Atari defaults (no config.yml found)",
        (WrapperRef(ATARI_WRAPPER),),
        ATARI_FRAME_STACK,
        policy="CnnPolicy",
        from_file=False,
    )


def read_run_config(model_file: Path, env_id: str) -> RunConfig | None:
    """The config of the rl_zoo3 run (or hub repo) of ``model_file`` for ``env_id``; None when it has none."""
    from zoo.frameworks.sb3.rlzoo_files import config_folder
    from zoo.frameworks.sb3.zooyaml import read_zoo_yaml

    folder = config_folder(model_file, env_id)
    if folder is None:
        return None
    path = folder / "config.yml"
    config, args = read_zoo_yaml(path), read_zoo_yaml(folder / "args.yml")
    where = str(path)
    if config.get("vec_env_wrapper"):
        raise UnsupportedError(
            f"{where}: vec_env_wrapper {config['vec_env_wrapper']!r} is not applied by zoo",
            hint="evaluate with rl_zoo3's enjoy, or drop the wrapper",
        )
    env_kwargs = _mapping(config.get("env_kwargs"), where, "env_kwargs")
    if args.get("env_kwargs") is not None:  # rl_zoo3's enjoy: args.yml's env_kwargs replace config.yml's
        env_kwargs = _mapping(args["env_kwargs"], str(folder / "args.yml"), "env_kwargs")
    policy = config.get("policy")
    frame_stack, normalize = (
        _frame_stack(config.get("frame_stack"), where),
        normalize_kwargs(config.get("normalize"), where),
    )
    if frame_stack and normalize:
        raise UnsupportedError(
            f"{where}: the run stacked frames of VecNormalize-d observations (normalize and "
            "frame_stack); zoo does not rebuild that order",
            hint="evaluate it with rl_zoo3's enjoy",
        )
    return RunConfig(
        source=where,
        wrappers=wrapper_refs(config.get("env_wrapper"), where),
        frame_stack=frame_stack,
        env_kwargs=freeze(env_kwargs),
        normalize=normalize,
        policy=policy if isinstance(policy, str) else None,
        policy_kwargs=_policy_kwargs(config.get("policy_kwargs"), where),
    )


def wrapper_refs(value: Any, where: str) -> tuple[WrapperRef, ...]:
    """``env_wrapper`` as rl_zoo3's ``get_wrapper_class`` reads it: a name, a ``{name: kwargs}``, or a list."""
    if value is None:
        return ()
    refs = []
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, dict) and len(item) == 1:
            name, kwargs = next(iter(item.items()))
            kwargs = _mapping(kwargs, where, f"env_wrapper {name}")
        elif isinstance(item, str):
            name, kwargs = item, {}
        else:
            raise ConfigProblem(
                f"{where}: env_wrapper entry {item!r} is neither a class name nor {{class name: kwargs}}",
                hint="fix the config as rl_zoo3 documents it",
            )
        if not isinstance(name, str) or "." not in name:
            raise ConfigProblem(f"{where}: env_wrapper {name!r} is not a dotted module.Class name")
        refs.append(WrapperRef(name, freeze(kwargs)))
    return tuple(refs)


def _mapping(value: Any, where: str, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, str):
        value = literal(value, where, what)
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise ConfigProblem(f"{where}: {what} is {type(value).__name__}, not a mapping of names to values")
    return value


def _frame_stack(value: Any, where: str) -> int:
    if value in (None, False):
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigProblem(f"{where}: frame_stack {value!r} is not a number of frames")
    return value


def normalize_kwargs(value: Any, where: str) -> dict | None:
    """``normalize`` as rl_zoo3's ``get_saved_hyperparams`` reads it: a flag, a dict, or a dict's source."""
    if value in (None, False):
        return None
    if value is True:
        return {"norm_obs": True, "norm_reward": False}
    kwargs = _mapping(value, where, "normalize")
    return kwargs or None


def _policy_kwargs(value: Any, where: str) -> dict | None:
    """``policy_kwargs``, usually ``"dict(net_arch=[64, 64], activation_fn=nn.Tanh)"``; None if unreadable."""
    if value is None:
        return None
    try:
        return _mapping(value, where, "policy_kwargs")
    except ConfigProblem:
        return None


#: How rl_zoo3's hyperparameter files spell torch modules (``nn.ReLU``, ``th.nn.Tanh``).
_TORCH_PREFIXES = ("nn.", "th.nn.", "torch.nn.")


def literal(text: str, where: str, what: str) -> Any:
    """A Python expression of literals, ``dict(key=value)`` calls and dotted names, read without running it.

    rl_zoo3 ``eval``s such strings. Here a dotted name (``nn.ReLU``) becomes its text, ``dict(...)`` a
    dict, and anything else (a call of another function, an operator, a lambda) is refused.
    """
    try:
        tree = ast.parse(text.strip(), mode="eval")
        return _value(tree.body)
    except (SyntaxError, ValueError, RecursionError) as exc:
        raise ConfigProblem(
            f"{where}: {what} {text[:80]!r} is not a literal zoo can read ({exc})",
            hint="zoo reads literals, dict(...) and dotted names; it evaluates no code",
        ) from None


def _value(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
    ):
        return -node.operand.value
    if isinstance(node, ast.List | ast.Tuple):
        return [_value(v) for v in node.elts]
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise ValueError("** in a dict literal")
        return {_value(k): _value(v) for k, v in zip(node.keys, node.values, strict=True)}
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "dict"
        and not node.args
    ):
        if any(kw.arg is None for kw in node.keywords):
            raise ValueError("** in dict(...)")
        return {kw.arg: _value(kw.value) for kw in node.keywords}
    if isinstance(node, ast.Name | ast.Attribute):
        return ast.unparse(node)
    raise ValueError(f"{type(node).__name__} is not a literal")


def policy_kwargs_difference(config: RunConfig, saved: dict[str, Any]) -> str | None:
    """Where the config's ``policy_kwargs`` and the zip's saved ones disagree (the zip's are used)."""
    if not config.policy_kwargs:
        return None
    for key, value in config.policy_kwargs.items():
        if key not in saved:
            return f"{key} is in {config.source} but not in the zip's policy_kwargs"
        if _comparable(saved[key]) != _comparable(value):
            return f"{key} is {value!r} in {config.source}, {_comparable(saved[key])!r} in the zip"
    return None


def _comparable(value: Any) -> Any:
    """A saved value in the config's spelling: classes by name, tuples as lists."""
    if isinstance(value, type):
        return value.__name__
    if isinstance(value, str) and value.startswith(_TORCH_PREFIXES):
        return value.rsplit(".", 1)[-1]
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_comparable(v) for v in value]
    return value


def run_config_for(model_file: Path | None, env_id: str) -> RunConfig | None:
    """The run's config; rl_zoo3's Atari defaults for an Atari model without one; else None."""
    from zoo.envs import extras_for_env

    config = read_run_config(model_file, env_id) if model_file is not None else None
    if config is None and "atari" in extras_for_env(env_id):
        return atari_defaults()
    return config


def eval_env_spec(config: RunConfig, env_id: str, video_dir: str | None, trusted: frozenset[str]):
    """The :class:`~zoo.envs.EnvSpec` of ``create_test_env``: the config's wrappers, refused unless trusted."""
    from zoo.env_wrappers import refuse_untrusted
    from zoo.envs import EnvSpec

    refuse_untrusted(config.wrappers, trusted, config.source)
    return EnvSpec(
        env_id,
        "run_config",
        video_dir,
        env_kwargs=config.env_kwargs,
        wrappers=config.env_wrappers,
        trusted_wrappers=trusted,
    )


def statistics_file(model_file: Path, env_id: str | None, config: RunConfig | None) -> Path | None:
    """The VecNormalize statistics the eval applies: rl_zoo3 loads them exactly when ``normalize`` is set.

    Without a config file, whatever statistics lie beside the model are applied (huggingface_sb3's way)."""
    from zoo.errors import LayoutMismatch
    from zoo.frameworks.sb3.normalize import find_stats

    stats = find_stats(model_file, env_id)
    if config is None or not config.from_file:
        return stats
    if config.normalize is None:
        return None
    if stats is None:
        raise LayoutMismatch(
            f"{config.source} says the run trained behind VecNormalize (normalize), but "
            "there is no vecnormalize.pkl for it",
            hint=f"copy the run's {env_id}/vecnormalize.pkl beside the model (rl_zoo3 saves it there)",
        )
    return stats
