"""``zoo doctor --handoff DIR``: a plan a human can read, check and run, instead of a run started for them.

Two files, each written atomically: ``handoff.json`` (everything, for tools) and ``HANDOFF.md`` (the
same in a page). They say what would run, with which versions, bounds and stop conditions, what it
would touch (files, network, credentials, workers, GPUs, time), the exact commands, and the runbook
beside them (:mod:`zoo.doctor.runbook`: monitoring, cancellation, recovery, cleanup, unresolved gaps).
Writing them runs nothing: the commands are for a person to run knowingly.
"""

from __future__ import annotations

import datetime as _dt
import math
import shlex
from pathlib import Path

from zoo.doctor.diagnosis import Diagnosis


def _training(diagnosis: Diagnosis, adapter) -> dict | None:
    """The training plan: the config as resolved, its cadence, protocol, stop conditions and command (the
    adapter's :meth:`~zoo.frameworks.Adapter.training_invocation`, as the library's own docs launch a run, on the
    config's device; a config's ``script`` replaces the adapter's :attr:`~zoo.frameworks.Adapter.training_script`),
    and the ``zoo watch`` command on the folder the run will write."""
    from zoo.doctor.runbook import job_name, newest

    report = diagnosis.config
    if report is None or report.problems:
        return None
    v = dict(report.values)
    evaluation = {"every": v["total_timesteps"] // 10, "episodes": 10, "seed": 0, **(v.get("eval") or {})}
    checkpoint_every = v.get("checkpoint_every") or evaluation["every"]
    steps_per_env = (v.get("hyperparams") or {}).get("num_steps_per_env", 24)  # rsl_rl / Isaac Lab's default
    fields = {
        **v,
        "script": v.get("script") or adapter.training_script.format(**v),
        "checkpoint_every": checkpoint_every,
        "eval_every": evaluation["every"],
        "eval_episodes": evaluation["episodes"],
        "config": str(report.path),
        "iterations": math.ceil(v["total_timesteps"] / (v["num_envs"] * steps_per_env)),
        "hyperparams": "".join(f" {k}:{val!r}" for k, val in (v.get("hyperparams") or {}).items()),
    }
    command = adapter.training_invocation(fields)
    wall = v["wall_time_minutes"]
    launcher = v.get("launcher", "local")
    job = job_name(v)
    if launcher == "slurm":
        command = (
            f"sbatch --job-name={job} --time={math.ceil(wall)} --gpus={v.get('gpus', 0)} "
            f"--cpus-per-task={v['num_envs']} --wrap {shlex.quote(command)}"
        )
    else:
        command = f"timeout {math.ceil(wall)}m nice -n 10 {command}"
    run_folder = adapter.training_run_folder.format(**fields)
    return {
        "config": v,
        "config_file": str(report.path),
        "launcher": launcher,
        "runs": report.runs,
        "checkpoint_every": checkpoint_every,
        "eval_protocol": {
            **evaluation,
            "deterministic": True,
            "how": "zoo watch: every checkpoint, seeded per-env quotas, best model kept with its normalizer",
        },
        "stop_conditions": {"total_timesteps": v["total_timesteps"], "wall_time_minutes": wall},
        "script": fields["script"],
        "command": command,
        "job_name": job if launcher == "slurm" else None,
        "run_folder": run_folder,  # a glob: the newest match is the run's (its name holds a time stamp or counter)
        "watch_command": f"zoo watch {newest(run_folder)} --every 1 --episodes {evaluation['episodes']} "
        f"--seed {evaluation['seed']} --idle 600",
    }


def _side_effects(diagnosis: Diagnosis, training: dict | None, adapter) -> dict:
    """What running the plan would touch, said before anyone runs it. The trainer's own network flags
    (:attr:`~zoo.frameworks.Adapter.network_flags`) are named with what each would send, and are never passed."""
    budget = diagnosis.eval_budget
    effects = {
        "files": [],
        "videos": False,
        "checkpoints": 0,
        "network": "none",
        "credentials": "none",
        "workers": "this process",
        "ram": "not estimated",
        "gpus": 0,
        "wall_time_minutes": None,
    }
    if budget:
        effects["files"].append(budget["out"])
        effects["videos"] = budget["render_mode"] is not None
    if training:
        v = training["config"]
        runs = training["runs"]
        effects["files"].append(
            f"{training['run_folder']}, the newest match (logs, checkpoints; zoo watch's evals.jsonl, best_model.*)"
        )
        effects["checkpoints"] = runs * math.ceil(v["total_timesteps"] / training["checkpoint_every"])
        effects["videos"] = effects["videos"] or bool(v.get("capture_video"))
        effects["workers"] = f"{runs} run(s) x {v['num_envs']} envs, launched by {training['launcher']}"
        effects["gpus"] = v.get("gpus", 0)
        effects["wall_time_minutes"] = runs * v["wall_time_minutes"]
        network, credentials = [], []
        if v.get("push_to_hub"):
            network.append("uploads to the Hub (zoo push --yes, after the run)")
            credentials.append("a Hub token with write access (HF_TOKEN), at push time only")
        flags = adapter.network_flags
        if flags:
            network.append(
                "none from training: the command passes none of the trainer's network flags, each a network "
                "integration that needs its own consent ("
                + ", ".join(f"{flag} would send {f.sends}" for flag, f in flags.items())
                + ")"
            )
            credentials.append(
                "none for training ("
                + ", ".join(f"{flag} would need {f.credential}" for flag, f in flags.items())
                + ")"
            )
        effects["network"] = "; ".join(network) or "none"
        effects["credentials"] = "; ".join(credentials) or "none"
    return effects


def manifest(diagnosis: Diagnosis, argv: list[str]) -> dict:
    """The handoff as one JSON-ready dict."""
    from zoo.doctor.installed import freeze, hardware
    from zoo.doctor.runbook import sections
    from zoo.frameworks import get_adapter

    adapter = get_adapter(diagnosis.framework) if diagnosis.framework else None
    training = _training(diagnosis, adapter)
    env = diagnosis.environment
    commands = [_eval_command(diagnosis)] if diagnosis.eval_budget else []
    if training:
        commands += [training["command"], training["watch_command"]]
    return {
        "created_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "authorizes_training": False,
        "doctor": {
            "command": shlex.join(["zoo", "doctor", *argv]),
            "exit_code": diagnosis.exit_code,
            "verdict": diagnosis.verdict,
            "checks": [c.to_json() for c in diagnosis.checks],
        },
        "framework": diagnosis.framework,
        "algorithm": (diagnosis.policy or {}).get("algorithm")
        or (training or {}).get("config", {}).get("algorithm"),
        "env": diagnosis.env or ({"env_id": training["config"]["env_id"]} if training else None),
        "versions": {
            "zoo": env["zoo"],
            **env["packages"],
            **{k: v for fw in env["frameworks"].values() for k, v in fw.items()},
        },
        "artifact": diagnosis.policy,
        "eval_budget": diagnosis.eval_budget,
        "training": training,
        "resource_caps": diagnosis.guardrail.to_json(),
        "hardware": {**hardware(), "torch": env["torch"]},
        "side_effects": _side_effects(diagnosis, training, adapter),
        "commands": commands,
        **sections(diagnosis, training, adapter),
        "dependency_lock": freeze(),
    }


def _eval_command(diagnosis: Diagnosis) -> str:
    """``zoo eval`` as the budget says: on the policy file, or on the user's class (``--policy-class``, no file)."""
    budget = diagnosis.eval_budget
    assert budget is not None and diagnosis.env is not None
    if diagnosis.policy:
        target = [diagnosis.policy["file"], "--exp-name", diagnosis.policy["exp_name"]]
    else:
        assert diagnosis.policy_class is not None
        target = [
            "--policy-class",
            diagnosis.policy_class["class"],
            "--exp-name",
            diagnosis.policy_class["exp_name"],
        ]
    return shlex.join(
        [
            "zoo",
            "eval",
            *target,
            "--env-id",
            diagnosis.env["env_id"],
            "--episodes",
            str(budget["episodes"]),
            "--seed",
            str(budget["seed"]),
            "--deterministic" if budget["deterministic"] else "--stochastic",
            "--out",
            budget["out"],
        ]
    )


def markdown(data: dict) -> str:
    """The handoff as a short page: verdict, what would run, what it would touch, the commands and the runbook."""
    lines = [
        "# Handoff",
        "",
        f"Made by `{data['doctor']['command']}` at {data['created_at']}.",
        f"Verdict: **{data['doctor']['verdict']}** (exit {data['doctor']['exit_code']}). "
        "This plan authorizes nothing: a person runs the commands below.",
        "",
        "## Checks",
        "",
    ]
    lines += [f"- {c['name']}: {c['status']}: {c['message']}" for c in data["doctor"]["checks"]]
    if data["artifact"]:
        a = data["artifact"]
        lines += [
            "",
            "## Artifact",
            "",
            f"- `{a['file']}` ({a['size']} bytes), sha256 `{a['sha256']}`",
            f"- origin: {a['origin']}",
            *[f"- companion `{c['file']}`, sha256 `{c['sha256']}`" for c in a["companions"]],
        ]
    if data["eval_budget"]:
        b = data["eval_budget"]
        lines += [
            "",
            "## Evaluation",
            "",
            f"- {b['episodes']} episodes, seed {b['seed']}, "
            f"{'deterministic' if b['deterministic'] else 'stochastic'}, max steps {b['max_steps'] or 'the env limit'}, "
            f"render {b['render_mode'] or 'off'}, output {b['out']}",
        ]
    if data["training"]:
        t = data["training"]
        lines += [
            "",
            "## Training",
            "",
            f"- {t['runs']} run(s) via {t['launcher']}; checkpoint every "
            f"{t['checkpoint_every']} steps; stop at {t['stop_conditions']['total_timesteps']} steps or "
            f"{t['stop_conditions']['wall_time_minutes']} minutes",
            f"- eval: every {t['eval_protocol']['every']} steps, {t['eval_protocol']['episodes']} episodes, "
            f"seed {t['eval_protocol']['seed']}, deterministic",
            f"- run folder: {t['run_folder']} (the newest match)",
        ]
    s = data["side_effects"]
    wall = f"{s['wall_time_minutes']} minutes" if s["wall_time_minutes"] is not None else "one evaluation"
    lines += [
        "",
        "## Side effects",
        "",
        f"- files: {', '.join(s['files']) or 'none'}; checkpoints: {s['checkpoints']}; "
        f"videos: {'yes' if s['videos'] else 'no'}",
        f"- network: {s['network']}; credentials: {s['credentials']}",
        f"- workers: {s['workers']}; GPUs: {s['gpus']}; RAM: {s['ram']}; wall time: {wall}",
        "",
        "## Commands",
        "",
        "```sh",
        *data["commands"],
        "```",
    ]
    for key, title in (
        ("monitoring", "Monitoring"),
        ("cancellation", "Cancellation"),
        ("recovery", "Recovery"),
        ("cleanup", "Cleanup"),
    ):
        section = data[key]
        lines += ["", f"## {title}", "", *[f"- {note}" for note in section["notes"]]]
        if section["commands"]:
            lines += ["", "```sh", *section["commands"], "```"]
    lines += ["", "## Unresolved gaps", "", *[f"- {gap}" for gap in data["unresolved_gaps"] or ["none"]]]
    lines += [
        "",
        f"Versions and the full dependency lock ({len(data['dependency_lock'])} packages) are in handoff.json.",
    ]
    return "\n".join(lines) + "\n"


def write_handoff(diagnosis: Diagnosis, folder: Path, argv: list[str]) -> list[Path]:
    """Write ``handoff.json`` and ``HANDOFF.md`` into ``folder`` (created), each atomically."""
    from zoo.atomic import check_writable, write_json_atomic, write_text_atomic
    from zoo.strict_json import jsonable

    check_writable(folder, "--handoff", folder=True)
    folder.mkdir(parents=True, exist_ok=True)
    data = manifest(diagnosis, argv)
    return [
        write_json_atomic(folder / "handoff.json", jsonable(data)),  # a config's own infinity, as a string
        write_text_atomic(folder / "HANDOFF.md", markdown(data)),
    ]
