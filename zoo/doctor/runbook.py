"""The handoff's runbook: how to follow what the plan runs, stop it, recover from a stop and clean up after it, and
what doctor could not establish (its unresolved gaps).

A handoff hands a person commands; these sections are what that person needs beside them. Each is built from the
diagnosis and the adapter's facts (:attr:`~zoo.frameworks.Adapter.training_run_folder`,
:attr:`~zoo.frameworks.Adapter.training_resume`, ...), never from a framework's name. A run folder whose name holds a
time stamp or a counter is found by a command (the newest match), not left as a placeholder.
"""

from __future__ import annotations

import re
import shlex

from zoo.doctor.checks import FAIL, SKIPPED
from zoo.doctor.diagnosis import Diagnosis


def newest(glob: str) -> str:
    """A shell word for the newest folder matching ``glob`` (a command substitution), or ``glob`` itself quoted
    when it names one folder."""
    if "*" not in glob:
        return shlex.quote(glob)
    quoted = "*".join(shlex.quote(part) if part else "" for part in glob.split("*"))
    return f'"$(ls -td {quoted} | head -n 1)"'


def job_name(config: dict) -> str:
    """The Slurm job name of a plan: what ``squeue --name`` and ``scancel --name`` find it by."""
    raw = f"zoo-{config['framework']}-{config['algorithm']}-{config['env_id']}-{config['seed']}"
    return re.sub(r"[^A-Za-z0-9._-]+", "-", raw)


def sections(diagnosis: Diagnosis, training: dict | None, adapter) -> dict:
    """The five sections, each ``{"commands": [...], "notes": [...]}`` but the gaps, a list of sentences."""
    if training is None and diagnosis.eval_budget is None:
        nothing = _section([], ["the plan runs nothing"])
        return {key: nothing for key in ("monitoring", "cancellation", "recovery", "cleanup")} | {
            "unresolved_gaps": gaps(diagnosis, None, adapter)
        }
    if training is None:
        out = diagnosis.eval_budget["out"]
        return {
            "monitoring": _section(
                [], [f"zoo eval shows a progress bar and writes {out} when every episode is done"]
            ),
            "cancellation": _section([], [f"Ctrl-C stops zoo eval; {out} is written only when it finishes"]),
            "recovery": _section(
                [], ["nothing to resume: the evaluation is seeded, so running it again gives the same result"]
            ),
            "cleanup": _section(
                [], [f"the evaluation writes {out}; delete it when its numbers are recorded"]
            ),
            "unresolved_gaps": gaps(diagnosis, None, adapter),
        }
    return {
        "monitoring": _monitoring(training, adapter),
        "cancellation": _cancellation(training),
        "recovery": _section(
            [],
            [
                adapter.training_resume or "how this trainer resumes a stopped run: see its docs",
                f"what survives a stop: what the trainer saved in {training['run_folder']}, and zoo watch's "
                "evals.jsonl, best_model.* and best_model_meta.json there (zoo watch, started again, goes on "
                "where it stopped)",
            ],
        ),
        "cleanup": _section(
            [],
            [
                f"the run makes {training['run_folder']} (the newest match: its checkpoints, logs and configs, "
                "with zoo watch's evals.jsonl, best_model.* and best_model_meta.json inside)",
                "delete it once the models you keep are copied out (zoo push, or a copy of best_model.*)",
            ],
        ),
        "unresolved_gaps": gaps(diagnosis, training, adapter),
    }


def _section(commands: list[str], notes: list[str]) -> dict:
    return {"commands": commands, "notes": notes}


def _monitoring(training: dict, adapter) -> dict:
    commands = [training["watch_command"]]
    notes = [
        f"the run writes {training['run_folder']}; the newest match is this run's (start zoo watch once it "
        "exists): zoo watch evaluates each checkpoint saved there, appends a line per evaluation to its "
        "evals.jsonl and keeps the best as best_model.* with best_model_meta.json"
    ]
    if adapter.train_return_tags:
        notes.append(
            f"the training return is logged to the run's events file as {adapter.train_return_tags[0]}"
        )
    if training["launcher"] == "slurm":
        commands.append(f"squeue --name {training['job_name']}")
        notes.append("the job's output goes to slurm-JOBID.out in the folder sbatch ran in")
    else:
        notes.append("the trainer prints its progress in the terminal that runs it")
    return _section(commands, notes)


def _cancellation(training: dict) -> dict:
    wall = training["stop_conditions"]["wall_time_minutes"]
    if training["launcher"] == "slurm":
        return _section(
            [f"scancel --name {training['job_name']}"],
            [f"Slurm stops the job by itself after {wall:g} minutes"],
        )
    # timeout leads the process group of the run (it calls setpgid): killing the group stops every worker
    pattern = re.sub(r"([.^$*+?()\[\]{}|\\])", r"\\\1", training["command"].split(" --")[0])
    return _section(
        [f'kill -TERM -- -"$(pgrep -o -f -- {shlex.quote(pattern)})"'],
        [
            "Ctrl-C in the terminal that runs it stops it; from another shell, the command below stops timeout's "
            "process group: the trainer and every worker it started",
            f"timeout stops it by itself after {wall:g} minutes",
        ],
    )


def gaps(diagnosis: Diagnosis, training: dict | None, adapter) -> list[str]:
    """What doctor could not establish: checks that failed or did not run, an env never created, a device this
    machine cannot exercise, a training script or a resume path it did not see."""
    found = [f"{c.name}: {c.message}" for c in diagnosis.checks if c.status in (FAIL, SKIPPED)]
    names = {c.name for c in diagnosis.checks}
    if (diagnosis.eval_budget or training) and "spaces" not in names:
        found.append("the env's spaces: never created here (doctor ran without --probe-env)")
    if diagnosis.policy_class:
        found.append(
            f"whether {diagnosis.policy_class['class']} builds and acts: only zoo eval runs it "
            "(doctor imports no user code)"
        )
    if training is None:
        return found
    config, torch = training["config"], diagnosis.environment["torch"]
    device = config.get("device")
    if device is None:
        found.append("device: the config states none, so the trainer runs on its own default")
    if ((device or "cpu") != "cpu" or config.get("gpus", 0) > 0) and not torch["cuda_available"]:
        found.append(
            f"the GPU path (device {device or 'default'}, {config.get('gpus', 0)} GPUs) was never exercised here: "
            f"torch sees no usable CUDA device (build: {torch.get('cuda_build') or 'CPU'})"
        )
    if "{script}" in adapter.training_command and not config.get("script"):
        found.append(
            f"the training script {training['script']}: not checked (its default path, where the command runs; "
            "set script: in the config to check it)"
        )
    if adapter.training_resume is None:
        found.append("how this trainer resumes a stopped run: zoo does not know it")
    found.append("RAM: not estimated")
    return found
