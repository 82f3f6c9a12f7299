"""``zoo doctor --policy FILE``: the file exists, its content is a model zoo can load, and (with
``--probe-env``) the env it is for has the spaces the model expects.

The content check is ``zoo check``'s inspection of the same run, with env creation off: so "ok"
here means what "ok" means there, the loader will succeed. With ``--probe-env`` the inspection is
repeated with doctor's probe, which creates the eval env the adapter asks for once (made, reset,
closed); an error that only the env comparison raises is the fit diagnosis, told apart from a bad file.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from zoo.artifacts.digest import sha256_file
from zoo.artifacts.report import ERROR, WARNING
from zoo.artifacts.scope import space_probe
from zoo.doctor.checks import FAIL, OK, Check, EnvProbe, blocked, skipped, spaces_check
from zoo.errors import ZooError

if TYPE_CHECKING:
    from zoo.doctor.diagnosis import Diagnosis


def _origin(path: Path) -> str:
    """Where the file came from, as far as its place says: the Hugging Face cache, or a local file."""
    from huggingface_hub import constants

    try:
        path.resolve().relative_to(Path(constants.HF_HUB_CACHE).resolve())
        return (
            "downloaded: in the Hugging Face cache (a hub file, verified against its checksum when fetched)"
        )
    except ValueError:
        return "local file (named by the user)"


def _run(adapter, path: Path, exp_name: str | None):
    """The one run at ``path`` that ``adapter`` recognizes, or a Check saying why there is none."""
    from zoo.artifacts.runs import Run

    runs = [adapter.identify(r) for r in adapter.discover(path) if r.model_file is not None]
    if not runs and path.is_file() and exp_name:
        runs = [adapter.identify(Run(framework=adapter.name, path=path, model_file=path, exp_name=exp_name))]
    if len(runs) == 1:
        return runs[0]
    if len(runs) > 1:
        return Check(
            "content", FAIL, f"{len(runs)} {adapter.name} runs under {path}", "give one run dir or model file"
        )
    named = next(iter(adapter.discover(path)), None) if path.exists() else None
    problem = (
        named.name_problem
        if named is not None and named.name_problem
        else f"no {adapter.name} model at {path}"
    )
    return Check("content", FAIL, problem, adapter.layout_hint)


def check_policy(
    diagnosis: Diagnosis,
    adapter,
    path: Path,
    *,
    env_id: str | None,
    env_module: str | None,
    exp_name: str | None,
    probe_env: bool,
    seed: int,
    episodes: int | None,
    registry,
) -> None:
    """Append the file, content and spaces checks for ``path`` to ``diagnosis``, each after the last passed."""
    from zoo.envs import qualify_env_id

    why = blocked(diagnosis.checks)
    if why:
        diagnosis.checks += [
            skipped(name, why) for name in ("file", "content", "spaces")[: 3 if probe_env else 2]
        ]
        return
    if not path.exists():
        diagnosis.checks.append(Check("file", FAIL, f"{path}: no such file or folder", "check the path"))
        return
    diagnosis.checks.append(Check("file", OK, f"{path} exists"))
    run = _run(adapter, path, exp_name)
    if isinstance(run, Check):
        diagnosis.checks.append(run)
        return
    entry = registry.find(exp_name or run.exp_name or "")
    if entry is None:
        diagnosis.checks.append(
            Check(
                "content",
                FAIL,
                f"{path}: cannot tell the experiment ({run.name_problem or run.exp_name or 'no name'})",
                "pass --exp-name",
            )
        )
        return
    env = env_id or run.env_id
    try:
        env = qualify_env_id(env, env_module) if env else None
    except ZooError as exc:
        diagnosis.checks.append(Check("content", FAIL, exc.message, exc.hint))
        return
    if env and not env_id:  # the run named its env: the env's packages before its content
        from zoo.doctor.checks import env_packages

        diagnosis.checks += env_packages(env, None)
        why = blocked(diagnosis.checks)
        if why:
            diagnosis.checks += [
                skipped(name, why) for name in ("content", "spaces")[: 2 if probe_env else 1]
            ]
            return
    run = dataclasses.replace(run, exp_name=entry.name, env_id=env or run.env_id)
    with space_probe(None):
        report = adapter.inspect_run(run, registry)
    if report.status == ERROR:
        diagnosis.checks.append(Check("content", FAIL, report.reason, report.hint, details=report.details))
        return
    said = (
        report.reason if report.status == WARNING else "loads safely"
    )  # a warning: e.g. needs --trust-pickle
    diagnosis.checks.append(
        Check(
            "content",
            OK,
            f"{run.model_file.name}: {entry.name} ({entry.framework}), {said}",
            report.hint if report.status == WARNING else None,
            details=report.details,
        )
    )
    diagnosis.policy = _artifact(adapter, run, entry)
    probed = _probe(diagnosis, adapter, run, entry, env, registry, report.status) if probe_env else None
    deterministic, _why = adapter.eval_mode(entry, env) if env else (entry.eval["deterministic"], "registry")
    diagnosis.eval_budget = {
        "seed": seed,
        "episodes": episodes or entry.eval["episodes"],
        "deterministic": deterministic,
        "max_steps": probed.get("max_episode_steps") if probed else None,
        "render_mode": None,
        "out": str((run.path if run.path.is_dir() else run.path.parent) / "eval.json"),
    }
    diagnosis.env = {"env_id": env, **(probed or {})}


def _artifact(adapter, run, entry) -> dict:
    """The model file and the companion state evaluation reads with it, each with its sha256."""
    model = run.model_file
    companions = adapter.companion_files(run)
    return {
        "file": str(model),
        "sha256": sha256_file(model),
        "size": model.stat().st_size,
        "origin": _origin(model),
        "run": str(run.path),
        "exp_name": entry.name,
        "framework": entry.framework,
        "algorithm": entry.algorithm,
        "companions": [{"file": str(p), "sha256": sha256_file(p)} for p in companions],
    }


def _probe(
    diagnosis: Diagnosis, adapter, run, entry, env_id: str | None, registry, content_status: str
) -> dict | None:
    """Inspect again with doctor's env probe: the env's spaces, then whether the model fits them."""
    if env_id is None:
        diagnosis.checks.append(Check("spaces", FAIL, f"{run.path}: cannot tell the env id", "pass --env-id"))
        return None
    probe = EnvProbe()
    with space_probe(probe):
        report = adapter.inspect_run(run, registry)
        if (
            not probe.seen and probe.failure is None
        ):  # the inspection did not ask: create the entry's eval env
            probe.attempt(adapter.env_spec(entry, env_id))
    check = spaces_check(probe, env_id)
    diagnosis.checks.append(check)
    if check.status != OK:
        return None
    if report.status == ERROR and content_status != ERROR:
        diagnosis.checks.append(Check("fit", FAIL, report.reason, report.hint or "check --env-id"))
    else:
        diagnosis.checks.append(Check("fit", OK, f"the model's observation and action spaces match {env_id}"))
    return check.details
