"""``zoo doctor``'s checks, in the order a failure must be told apart: package, file, content, spaces.

A missing module is reported as a missing module, never as a bad file, because the package checks
run first and a later check that depends on a failed one is marked "not checked" instead of run.
The content check is ``zoo check``'s own inspection (bytes verified statically, values decoded by
zoo's restricted reader, never ``pickle.load``) with env creation switched off; only ``--probe-env``
creates an env, once: made, reset, its spaces read, closed, never stepped.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from zoo.errors import ZooError

OK, FAIL, OVER, SKIPPED = "ok", "fail", "over", "not checked"

#: What each launcher needs on this machine: a distribution, or a program on PATH.
LAUNCHER_NEEDS = {
    "local": (),
    "hydra-local": ("dist:hydra-core",),
    "submitit": ("dist:submitit",),
    "slurm": ("program:sbatch",),
}


@dataclass
class Check:
    """One line of the diagnosis: what was checked, how it went, and the fix."""

    name: str
    status: str
    message: str
    hint: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def skipped(name: str, because: str) -> Check:
    return Check(name, SKIPPED, f"not checked: {because}")


def blocked(checks: list[Check]) -> str | None:
    """Why the next checks cannot run: the first failed one, which they depend on (None: nothing failed)."""
    failed = next((c for c in checks if c.status == FAIL), None)
    return None if failed is None else f"{failed.name} failed first"


def distribution_check(name: str, purpose: str, hint: str) -> Check:
    from zoo.doctor.installed import installed_version

    found = installed_version(name)
    if found is None:
        return Check(f"package {name}", FAIL, f"{name} is not installed ({purpose})", hint)
    return Check(f"package {name}", OK, f"{name} {found}", details={"version": found})


def module_check(module: str, purpose: str, hint: str) -> Check:
    """A module is importable, found without importing it (its top-level package only: a dotted
    name's parents would be imported by the lookup)."""
    top = module.split(".")[0]
    if find_spec(top) is None:
        return Check(f"module {top}", FAIL, f"no module named {top!r} ({purpose})", hint)
    return Check(f"module {top}", OK, f"{top} found ({purpose})")


def install_line(adapter, module: str, requirement: str) -> str:
    """How to install ``module``: the zoo extra the adapter owns that brings it, else ``pip install requirement``."""
    extra = next((name for name, modules in adapter.extra_modules.items() if module in modules), None)
    return f"pip install 'rl-zoo-hub[{extra}]'" if extra else f"pip install {requirement}"


def framework_check(adapter) -> Check:
    """``zoo doctor --framework NAME`` without a policy or a config: the workflow's first question, whether NAME's
    packages are here. Each extra the adapter owns must be installed as ``zoo doctor``'s table counts it (every
    distribution, and its modules found, not imported) at a version within zoo's requirement, and each module its
    training imports must be found; the versions of its libraries come from their metadata."""
    from zoo.doctor.installed import extras, installed_version, requirement_problems

    owned = {e.name: e for e in extras() if e.name in adapter.extra_modules}
    problems: dict[str, str] = {}  # what is wrong: how to fix it
    for name, modules in adapter.extra_modules.items():
        missing = owned[name].missing if name in owned else [m for m in modules if find_spec(m) is None]
        if missing:
            problems[f"the {name} extra is missing {', '.join(missing)}"] = (
                f"pip install 'rl-zoo-hub[{name}]'"
            )
    for line in requirement_problems(list(adapter.extra_modules)):
        problems[line] = f"pip install 'rl-zoo-hub[{','.join(adapter.extra_modules)}]'"
    owned_modules = {m for modules in adapter.extra_modules.values() for m in modules}
    for module, requirement in adapter.training_modules.items():
        if module not in owned_modules and find_spec(module.split(".")[0]) is None:
            problems[f"no module named {module!r} ({adapter.name} training imports it)"] = (
                f"pip install {requirement}"
            )
    versions = {name: installed_version(name) for name in adapter.packages}
    name, details = f"framework {adapter.name}", {"versions": versions}
    if problems:
        return Check(name, FAIL, "; ".join(problems), " and ".join(dict.fromkeys(problems.values())), details)
    needed = sorted(owned_modules | set(adapter.training_modules))
    if not needed:
        return Check(name, OK, f"{adapter.name} needs no package beyond zoo's own", details=details)
    said = ", ".join(f"{n} {v or 'not installed (not needed)'}" for n, v in versions.items())
    return Check(name, OK, f"{', '.join(needed)} found" + (f"; {said}" if said else ""), details=details)


def framework_packages(adapter, *, loading: bool, training: bool, script: str | None = None) -> list[Check]:
    """What the framework needs here: the extra zoo loads its models with, and for a training plan the
    script a config names and the modules its training imports (:attr:`Adapter.training_modules`: CleanRL's
    scripts need torch and gymnasium, not a cleanrl package)."""
    checks = []
    if loading and adapter.extra:
        for module in adapter.extra_modules.get(adapter.extra, ()):
            checks.append(
                module_check(
                    module,
                    f"zoo loads {adapter.name} models with it",
                    f"pip install 'rl-zoo-hub[{adapter.extra}]'",
                )
            )
    if training:
        if script is not None:
            found = Path(script).is_file()
            checks.append(
                Check(
                    "training script",
                    OK if found else FAIL,
                    f"{script} {'found' if found else 'not found'}",
                    None if found else "set script: to the training script's path",
                )
            )
        for module, requirement in adapter.training_modules.items():
            checks.append(
                module_check(
                    module, f"{adapter.name} training imports it", install_line(adapter, module, requirement)
                )
            )
    return checks


def env_packages(env_id: str, env_module: str | None) -> list[Check]:
    """The optional extra an env id needs (MuJoCo, Atari, MyoSuite, Genesis) and the module that registers it."""
    from zoo.envs import env_module_of, extras_for_env, missing_modules_for_extras

    missing = set(missing_modules_for_extras(extras_for_env(env_id)))
    checks = [
        Check(
            f"extra {extra}",
            FAIL,
            f"{env_id} needs the {extra} extra (not installed)",
            f"pip install 'rl-zoo-hub[{extra}]'",
        )
        if extra in missing
        else Check(f"extra {extra}", OK, f"{env_id} needs the {extra} extra")
        for extra in extras_for_env(env_id)
    ]
    module = env_module or env_module_of(env_id)
    if module:
        checks.append(
            module_check(module, f"it registers {env_id}", f"install the package that provides {module}")
        )
    return checks


def launcher_checks(launcher: str) -> list[Check]:
    checks = []
    for need in LAUNCHER_NEEDS[launcher]:
        kind, name = need.split(":")
        if kind == "dist":
            checks.append(distribution_check(name, f"the {launcher} launcher", f"pip install {name}"))
        else:
            found = shutil.which(name)
            checks.append(
                Check(
                    f"program {name}",
                    OK if found else FAIL,
                    f"{name} at {found}" if found else f"{name} is not on PATH (the {launcher} launcher)",
                    None if found else "run doctor on a cluster login node",
                )
            )
    return checks


class EnvProbe:
    """Creates each env the checks ask about once (made, reset with seed 0, closed) and remembers it."""

    def __init__(self) -> None:
        self.seen: dict[Any, dict] = {}
        self.failure: ZooError | None = None

    def __call__(self, spec) -> tuple:
        from zoo.envs import PresetMismatch

        if spec not in self.seen:
            try:
                self.seen[spec] = _create_and_reset(spec)
            except PresetMismatch as exc:  # made, but not what the preset wraps: the fit check says why
                self.seen[spec] = {
                    "observation_space": exc.spaces[0],
                    "action_space": exc.spaces[1],
                    "max_episode_steps": None,
                    "created": True,
                    "refused": exc,
                }
            except ZooError as exc:
                self.failure = exc
                raise
        found = self.seen[spec]
        if "refused" in found:
            raise found["refused"]
        return found["observation_space"], found["action_space"]

    def attempt(self, spec) -> None:
        """Create ``spec``'s env for the record: a failure is kept in :attr:`failure`, not raised."""
        with contextlib.suppress(ZooError):
            self(spec)


def _create_and_reset(spec) -> dict:
    from zoo.envs import env_factory
    from zoo.tensor_env import TensorEnvSpec

    if isinstance(spec, TensorEnvSpec):  # zoo's tensor tasks state their spaces; a scene is not built
        obs, act = spec.spaces()
        return {"observation_space": obs, "action_space": act, "max_episode_steps": None, "created": False}
    env = env_factory(dataclasses.replace(spec, video_dir=None, video_log=None), 0)()
    try:
        env.reset(seed=0)
        limit = env.spec.max_episode_steps if env.spec is not None else None
        return {
            "observation_space": env.observation_space,
            "action_space": env.action_space,
            "max_episode_steps": limit,
            "created": True,
        }
    finally:
        env.close()


def spaces_check(probe: EnvProbe, env_id: str) -> Check:
    """What the probe saw of the env (or why it could not make it)."""
    if probe.failure is not None:
        return Check(
            "spaces", FAIL, probe.failure.message, probe.failure.hint or "check --env-id and the env's extra"
        )
    if not probe.seen:
        return skipped("spaces", "no env was created")
    found = next(iter(probe.seen.values()))
    obs, act = summary(found["observation_space"]), summary(found["action_space"])
    return Check(
        "spaces",
        OK,
        f"{env_id}: observation {obs}, action {act}",
        details={
            "env_id": env_id,
            "observation_space": str(found["observation_space"]),
            "action_space": str(found["action_space"]),
            "max_episode_steps": found["max_episode_steps"],
        },
    )


def summary(space) -> str:
    """A space in a few words: a Box by shape and dtype (its bounds fill a screen), others as gymnasium says."""
    from gymnasium import spaces

    if isinstance(space, spaces.Box):
        return f"Box{space.shape} {space.dtype}"
    if isinstance(space, spaces.Dict):
        return "Dict(" + ", ".join(f"{k}: {summary(v)}" for k, v in space.spaces.items()) + ")"
    return str(space)


def probe_plain_env(env_id: str) -> EnvProbe:
    """``--probe-env`` without a policy: the env as gymnasium makes it (zoo's classic preset)."""
    from zoo.envs import EnvSpec
    from zoo.tensor_env import TensorEnvSpec, is_task

    probe = EnvProbe()
    spec = TensorEnvSpec(env_id) if is_task(env_id) else EnvSpec(env_id)
    probe.attempt(spec)
    return probe
