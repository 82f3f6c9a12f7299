"""``zoo watch`` and ``ZooEvalCallback``: follow a training run, evaluate its checkpoints, keep the best.

The proofs train for real, in a subprocess, while the watcher follows: Stable-Baselines3 (PPO with
VecNormalize, ``CheckpointCallback(save_vecnormalize=True)``) watched by the ``zoo watch`` command itself,
rsl_rl (``OnPolicyRunner``) and skrl (``Runner``) watched by ``zoo.watch`` in a thread. Each ends with a fresh ``zoo eval`` of
the best model kept, which must give the score recorded for it, bit for bit. The other tests drive the
watcher poll by poll (:meth:`Watcher.poll`, a fake clock) over CleanRL runs made from the bundled example.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from helpers import EXAMPLES, REPO, save_model, zoo

import zoo as zoo_api
from zoo.envs import EnvSpec, make_vector_env
from zoo.errors import ZooError
from zoo.eval_session import EvalSession
from zoo.evaluator import evaluate
from zoo.registry import load_registry
from zoo.watcher.loop import Watcher, WatchResult
from zoo.watcher.records import BEST_META_FILE, EVALS_FILE, read_records

TRAINED_DQN = next(EXAMPLES.glob("CartPole-v1__dqn__*")) / "dqn.cleanrl_model"  # 500 on CartPole
QUICK = {"nice": 0, "max_cpu": None, "episodes": 2, "num_envs": 2}  # in-process: never renice the test worker


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "runs" / "CartPole-v1__dqn__1__1700000000"
    run.mkdir(parents=True)
    return run


def _random_dqn(path: Path, seed: int) -> Path:
    """An untrained dqn: CartPole ends in about 9 steps."""
    return save_model(path, "dqn", "CartPole-v1", seed=seed)


def _step_copies(run: Path) -> Path:
    """``dqn_{1000,2000,3000}.cleanrl_model``: the trained model in the middle, untrained ones around it."""
    _random_dqn(run / "dqn_1000.cleanrl_model", seed=1)
    shutil.copy(TRAINED_DQN, run / "dqn_2000.cleanrl_model")
    _random_dqn(run / "dqn_3000.cleanrl_model", seed=2)
    return run


def _watcher(run: Path, **settings) -> tuple[Watcher, list[dict], list[str]]:
    registry = load_registry()
    lines, notes = [], []
    session = EvalSession(registry, episodes=2, num_envs=2)
    watcher = Watcher(
        run, registry, session, notify=notes.append, on_eval=lines.append, clock=Clock(), **settings
    )
    return watcher, lines, notes


# ----------------------------------------------------------------------------- the kept eval env
def test_a_kept_env_gives_the_episodes_of_a_fresh_env_bit_for_bit(tmp_path):
    """An env kept across evaluations (reset with the seed) is a fresh env to each: the episodes of a policy
    evaluated after another one on it are those of a fresh-env evaluation, returns to the last bit."""
    td3 = next(EXAMPLES.glob("Pendulum-v1__td3_continuous_action__*"))
    other = save_model(
        tmp_path / "runs" / td3.name / "td3_continuous_action.cleanrl_model",
        "td3_continuous_action",
        "Pendulum-v1",
        seed=3,
    )
    a, b = zoo_api.load_policy(td3), zoo_api.load_policy(other)
    spec = EnvSpec("Pendulum-v1")
    settings = dict(
        episodes=6,
        num_envs=4,
        seed=5,
        deterministic=True,
        checkpoint="-",
        exp_name=None,
        framework=None,
        device="cpu",
    )
    fresh = evaluate(a, spec, **settings)
    envs = make_vector_env(spec, 4)
    try:
        other_result = evaluate(b, spec, envs=envs, **settings)  # leaves envs mid-episode (quotas 2, 2, 1, 1)
        kept = evaluate(a, spec, envs=envs, **settings)
    finally:
        envs.close()
    assert [e.return_ for e in other_result.episodes] != [e.return_ for e in fresh.episodes]
    assert kept.episodes == fresh.episodes
    with pytest.raises(ValueError, match="kept env"):  # its running statistics would carry over
        evaluate(a, EnvSpec("Pendulum-v1", preset="normalized_continuous"), envs=envs, **settings)


def test_the_watch_builds_its_eval_env_once(tmp_path, monkeypatch):
    import zoo.eval_session as session

    built = []
    monkeypatch.setattr(session, "make_vector_env", lambda *a: built.append(a) or make_vector_env(*a))
    result = zoo_api.watch(_step_copies(_run_dir(tmp_path)), idle=0.2, poll=0.02, **QUICK)
    assert len(result.evaluations) == 3 and len(built) == 1


# ----------------------------------------------------------------------------- checkpoints being written
def test_a_half_written_checkpoint_is_retried_and_evaluated_once_complete(tmp_path):
    run = _run_dir(tmp_path)
    whole = TRAINED_DQN.read_bytes()
    path = run / "dqn_1000.cleanrl_model"
    path.write_bytes(whole[: len(whole) // 2])  # the trainer is still writing it
    watcher, lines, notes = _watcher(run, retries=5)
    watcher.poll()  # first seen: waits a poll
    assert lines == [] and "following the cleanrl run" in notes[-1]
    watcher.poll()  # unchanged since, so read: it is cut short
    assert lines == [] and "try 1 of 5" in notes[-1]
    path.write_bytes(whole)  # the trainer is done with it
    watcher.poll()  # changed: waits again
    assert lines == []
    watcher.poll()
    assert [(line["status"], line["step"], line["sha256"]) for line in lines] == [("ok", 1000, _sha(whole))]
    assert lines[0]["metrics"]["return_mean"] == 500.0 and lines[0]["new_best"]


def test_a_checkpoint_that_never_loads_is_recorded_as_failed_and_the_watch_goes_on(tmp_path):
    run = _run_dir(tmp_path)
    (run / "dqn_1000.cleanrl_model").write_bytes(b"not a model")
    watcher, lines, _ = _watcher(run, retries=2)
    for _ in range(3):
        watcher.poll()
    (failed,) = lines
    assert (
        failed["status"] == "failed"
        and failed["attempts"] == 2
        and failed["checkpoint"] == "dqn_1000.cleanrl_model"
    )
    assert failed["error"] and failed["hint"]
    shutil.copy(TRAINED_DQN, run / "dqn_2000.cleanrl_model")
    watcher.poll(), watcher.poll(), watcher.poll()
    assert [line["status"] for line in lines] == ["failed", "ok"]
    assert [line["status"] for line in read_records(run).lines] == ["failed", "ok"]


def test_a_model_saved_over_in_place_is_evaluated_once_per_version(tmp_path):
    run = tmp_path / "runs" / TRAINED_DQN.parent.name
    shutil.copytree(TRAINED_DQN.parent, run)
    trained = (run / "dqn.cleanrl_model").read_bytes()
    _random_dqn(run / "dqn.cleanrl_model", seed=1)
    watcher, lines, _ = _watcher(run)
    watcher.poll(), watcher.poll(), watcher.poll()
    (run / "dqn.cleanrl_model").write_bytes(trained)
    watcher.poll(), watcher.poll()
    assert [line["checkpoint"] for line in lines] == ["dqn.cleanrl_model"] * 2
    assert [line["new_best"] for line in lines] == [True, True] and lines[1]["sha256"] == _sha(trained)
    assert lines[0]["step"] == 49572, "no step in its name: the step its TensorBoard log had reached"


# ----------------------------------------------------------------------------- stop rules and resuming
def test_every_k_and_the_idle_stop_which_evaluates_the_newest_checkpoint(tmp_path):
    run = _step_copies(_run_dir(tmp_path))
    result = zoo_api.watch(run, every=2, idle=0.2, poll=0.02, **QUICK)
    assert result.stopped == "idle" and result.framework == "cleanrl"
    assert [line["step"] for line in result.evaluations] == [2000, 3000]  # 2nd new one, then the newest
    best = json.loads((run / BEST_META_FILE).read_text())
    assert (best["step"], best["return_mean"], best["source_checkpoint"]) == (
        2000,
        500.0,
        "dqn_2000.cleanrl_model",
    )
    assert (run / "best_model.cleanrl_model").read_bytes() == TRAINED_DQN.read_bytes()
    assert (
        best["eval"]["metrics"]["return_mean"] == 500.0
        and best["episodes"] == 2
        and best["success_rate"] is None
    )


def test_until_stops_after_evaluating_that_step(tmp_path):
    result = zoo_api.watch(_step_copies(_run_dir(tmp_path)), until=2000, idle=30, poll=0.02, **QUICK)
    assert result.stopped == "until" and [line["step"] for line in result.evaluations] == [1000, 2000]


def test_a_restarted_watch_evaluates_nothing_twice_and_keeps_the_best(tmp_path):
    run = _step_copies(_run_dir(tmp_path))
    first = zoo_api.watch(run, idle=0.2, poll=0.02, **QUICK)
    meta = (run / BEST_META_FILE).read_text()
    again = zoo_api.watch(run, idle=0.2, poll=0.02, **QUICK)
    assert (
        len(first.evaluations) == 3 and again.evaluations == [] and (run / BEST_META_FILE).read_text() == meta
    )
    _random_dqn(run / "dqn_4000.cleanrl_model", seed=4)
    notes = []
    later = zoo_api.watch(run, idle=0.2, poll=0.02, notify=notes.append, **QUICK)
    assert [line["step"] for line in later.evaluations] == [4000] and not later.evaluations[0]["new_best"]
    assert later.best["step"] == 2000 and "3 in evals.jsonl, best 500.00 at step 2000" in notes[0]
    assert len(read_records(run).lines) == 4


def test_ctrl_c_while_the_best_model_is_written_waits_until_the_records_agree(tmp_path, monkeypatch):
    import signal

    import zoo.watcher.records as records

    copy = records.copy_file_atomic

    def copy_then_ctrl_c(*args, **kwargs):
        copied = copy(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGINT)  # between the model copy and its meta
        return copied

    monkeypatch.setattr(records, "copy_file_atomic", copy_then_ctrl_c)
    run = _step_copies(_run_dir(tmp_path))
    watcher, _, _ = _watcher(run)
    watcher.poll()
    with pytest.raises(KeyboardInterrupt):
        watcher.poll()
    found = read_records(run)
    assert [line["step"] for line in found.lines] == [1000] and found.best["step"] == 1000
    assert (run / "best_model.cleanrl_model").read_bytes() == (run / "dqn_1000.cleanrl_model").read_bytes()


def test_a_meta_that_names_files_outside_the_run_dir_is_reported_not_obeyed(tmp_path):
    run = _step_copies(_run_dir(tmp_path))
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    planted = {
        "model": "best_model.cleanrl_model",
        "files": ["../../victim.txt"],
        "return_mean": -1e9,
        "step": 0,
    }
    (run / BEST_META_FILE).write_text(json.dumps(planted))
    notes = []
    result = zoo_api.watch(run, idle=0.2, poll=0.02, notify=notes.append, **QUICK)
    assert victim.read_text() == "keep me" and result.best["step"] == 2000
    assert any(
        n.startswith("warning: best_model_meta.json: files is not a list of best_model* names") for n in notes
    )


def test_a_best_model_zoo_did_not_write_is_left_alone(tmp_path):
    run = _step_copies(_run_dir(tmp_path))
    shutil.copy(TRAINED_DQN, run / "best_model.cleanrl_model")  # someone else's: no best_model_meta.json
    watcher, _, _ = _watcher(run)
    with pytest.raises(ZooError, match="exists and zoo did not write it"):
        watcher.poll()


def test_the_command_says_what_is_wrong_and_waits_for_a_run(tmp_path):
    quick = ("--nice", "0", "--max-cpu", "0", "--poll", "0.05")
    missing = zoo("watch", tmp_path / "nope", *quick)
    assert missing.exit_code == 2 and "does not exist" in missing.stderr and "hint:" in missing.stderr
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("no checkpoint here")
    empty = zoo("watch", tmp_path / "empty", "--idle", "0.3", *quick)
    assert empty.exit_code == 1 and "waiting for a checkpoint" in empty.stderr
    assert "no checkpoint zoo recognizes appeared" in empty.stderr and "hint:" in empty.stderr
    run = _step_copies(_run_dir(tmp_path))
    printed = zoo("watch", run, "--idle", "0.3", "-n", "2", "--num-envs", "2", "--json", *quick)
    assert printed.exit_code == 0, printed.stderr
    assert [json.loads(line)["step"] for line in printed.stdout.splitlines()] == [1000, 2000, 3000]
    assert "step 2000  return 500.00 +/- 0.00" in printed.stderr and "new best" in printed.stderr
    assert "stopped (idle for 0.3 s): 3 evaluations; best 500.00 at step 2000" in printed.stderr


def test_the_watcher_lowers_its_own_priority_by_default():
    """``zoo watch`` and ``zoo.watch`` default to nice 10 on one core; applied in a process of its own (a fork
    here), that is niceness up by 10, one allowed core, one torch thread."""
    import inspect
    import multiprocessing

    from zoo.cli.watch import watch_cmd
    from zoo.watcher.priority import lower_priority

    defaults = {p.name: p.default for p in watch_cmd.params}
    api = inspect.signature(zoo_api.watch).parameters
    assert (
        defaults["nice"] == api["nice"].default == 10 and defaults["max_cpu"] == api["max_cpu"].default == 1
    )

    def lowered(queue):
        import torch

        before = os.nice(0)
        said = lower_priority(10, 1)
        queue.put((os.nice(0) - before, len(os.sched_getaffinity(0)), torch.get_num_threads(), said))

    queue = multiprocessing.get_context("fork").Queue()
    child = multiprocessing.get_context("fork").Process(target=lowered, args=(queue,))
    child.start()
    raised, cores, threads, said = queue.get(timeout=30)
    child.join(timeout=30)
    assert (
        (raised, cores, threads) == (10, 1, 1)
        and said[0].startswith("nice ")
        and said[-1] == "1 torch thread"
    )


def test_sched_idle_puts_the_watcher_under_linux_idle_policy():
    """``--sched-idle``: the watcher runs only when a core would otherwise idle (applied in a fork)."""
    import multiprocessing

    from zoo.watcher.priority import lower_priority

    def lowered(queue):
        said = lower_priority(10, None, sched_idle=True)
        queue.put((os.sched_getscheduler(0), said))

    queue = multiprocessing.get_context("fork").Queue()
    child = multiprocessing.get_context("fork").Process(target=lowered, args=(queue,))
    child.start()
    policy, said = queue.get(timeout=30)
    child.join(timeout=30)
    assert policy == os.SCHED_IDLE and said == ["SCHED_IDLE"]
    assert os.sched_getscheduler(0) != os.SCHED_IDLE  # the test worker itself is untouched


# ----------------------------------------------------------------------------- zoo check
def test_check_shows_the_best_step_and_score_and_warns_about_malformed_records(tmp_path):
    run = tmp_path / "runs" / TRAINED_DQN.parent.name
    shutil.copytree(TRAINED_DQN.parent, run)
    zoo_api.watch(run, idle=0.2, poll=0.02, **QUICK)
    (report,) = zoo("check", run, "--json").json()
    assert report["status"] == "ok"
    assert report["details"]["watch"] == {
        "evaluations": 1,
        "failed": 0,
        "last_step": 49572,
        "best": {
            "model": "best_model.cleanrl_model",
            "step": 49572,
            "return_mean": 500.0,
            "return_std": 0.0,
            "success_rate": None,
        },
    }
    table = zoo("check", run, env={"COLUMNS": "200"})
    assert "best eval" in table.stdout and "500.0 at step 49572 (1 eval)" in table.stdout
    again = zoo(
        "eval",
        run / "best_model.cleanrl_model",
        "--deterministic",
        "-n",
        "2",
        "--num-envs",
        "2",
        "--out",
        tmp_path / "again.json",
        "-q",
    )
    assert (
        again.exit_code == 0
        and json.loads((tmp_path / "again.json").read_text())["metrics"]["return_mean"] == 500.0
    )
    with (run / EVALS_FILE).open("a") as fh:
        fh.write('{"cut short')
    (run / BEST_META_FILE).write_text("{")
    broken = zoo("check", run, "--json")
    (report,) = broken.json()
    assert broken.exit_code == 0 and report["status"] == "warning"
    assert "evals.jsonl line 2: not JSON" in report["reason"] and any(
        BEST_META_FILE in n for n in report["notes"]
    )
    assert report["details"]["watch"]["best"] is None and report["details"]["watch"]["evaluations"] == 1


# ----------------------------------------------------------------------------- real training, followed
SB3_TRAINER = """
import sys

import torch
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import CheckpointCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecNormalize

torch.set_num_threads(1)
run_dir = sys.argv[1]
env = VecNormalize(make_vec_env("CartPole-v1", n_envs=2, seed=0))
model = PPO("MlpPolicy", env, n_steps=128, batch_size=64, n_epochs=2, seed=0, device="cpu",
            policy_kwargs={"net_arch": [32, 32]})
model.learn(2048, callback=CheckpointCallback(save_freq=256, save_path=run_dir, save_vecnormalize=True))
# The last checkpoint is bad on purpose: a zeroed action head always pushes left (about 9 on CartPole),
# and its statistics moved on, so the best is an earlier checkpoint whose snapshot is not the final one.
with torch.no_grad():
    for p in model.policy.action_net.parameters():
        p.zero_()
env.reset()
for _ in range(20):
    env.step([0, 1])
model.save(f"{run_dir}/rl_model_2560_steps.zip")
env.save(f"{run_dir}/rl_model_vecnormalize_2560_steps.pkl")
"""


def _start(script: str, *args: str | Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), str(REPO)])}
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), *map(str, args)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _zoo_command(*args: str | Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "zoo", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )


def _train_while_watching(trainer: str, run: Path, **settings) -> WatchResult:
    """``trainer`` run in a subprocess while ``zoo.watch`` follows ``run`` in a thread (in-process: the test
    worker keeps its priority); the watch's result."""
    results = []
    watcher = threading.Thread(
        target=lambda: results.append(
            zoo_api.watch(run, idle=120, poll=0.2, nice=0, max_cpu=None, **settings)
        )
    )
    watcher.start()
    process = _start(trainer, run)
    _, errors = process.communicate(timeout=180)
    assert process.returncode == 0, errors
    watcher.join(timeout=180)
    (result,) = results
    return result


def _re_evaluated(target: Path, meta: dict, out: Path, *args: str) -> dict:
    """A fresh ``zoo eval`` of the best model with the settings its meta records."""
    result = zoo(
        "eval",
        target,
        "--deterministic",
        "-n",
        meta["episodes"],
        "--seed",
        meta["seed"],
        "--num-envs",
        meta["eval"]["num_envs"],
        "--out",
        out,
        "-q",
        *args,
    )
    assert result.exit_code == 0, result.stderr
    return json.loads(out.read_text())


@pytest.mark.trains
def test_sb3_training_followed_by_the_zoo_watch_command(tmp_path):
    run = tmp_path / "sb3-run"
    run.mkdir()
    # at its default nice 10 the watcher would (rightly) yield to the test workers keeping both cores busy
    watch = _zoo_command(
        "watch",
        run,
        "--env-id",
        "CartPole-v1",
        "--until",
        "2560",
        "--idle",
        "120",
        "--poll",
        "0.3",
        "-n",
        "10",
        "--json",
        "--nice",
        "0",
        "--max-cpu",
        "0",
    )
    trainer = _start(SB3_TRAINER, run)
    _, errors = trainer.communicate(timeout=120)
    assert trainer.returncode == 0, errors
    stdout, stderr = watch.communicate(timeout=120)
    assert watch.returncode == 0, stderr
    printed = [json.loads(line) for line in stdout.splitlines()]
    lines = read_records(run).lines
    assert printed == lines and [line["step"] for line in lines] == [512, 1024, 1536, 2048, 2560]
    assert all(line["status"] == "ok" and line["episodes"] == 10 for line in lines)
    meta = json.loads((run / BEST_META_FILE).read_text())
    best = max(lines, key=lambda line: line["metrics"]["return_mean"])
    assert (meta["step"], meta["return_mean"]) == (best["step"], best["metrics"]["return_mean"]) and meta[
        "step"
    ] < 2560
    assert meta["files"] == ["best_model.zip", "best_model_vecnormalize.pkl"]
    source = run / meta["source_checkpoint"]
    assert (run / "best_model.zip").read_bytes() == source.read_bytes()
    snapshot = (run / "best_model_vecnormalize.pkl").read_bytes()
    assert snapshot == (run / f"rl_model_vecnormalize_{meta['step']}_steps.pkl").read_bytes(), (
        "the checkpoint's own"
    )
    assert snapshot != (run / "rl_model_vecnormalize_2560_steps.pkl").read_bytes(), "not the final statistics"
    again = _re_evaluated(run / "best_model.zip", meta, tmp_path / "again.json")  # env id from the meta
    assert (
        again["metrics"]["return_mean"] == meta["return_mean"]
        and again["episodes"] == meta["eval"]["episodes"]
    )


RSL_TRAINER = """
import sys
from pathlib import Path

import torch
import yaml
from helpers import GymVecEnv, rsl_rl_train_cfg
from rsl_rl.runners import OnPolicyRunner

torch.set_num_threads(1)
run_dir = Path(sys.argv[1])
cfg = rsl_rl_train_cfg(None)
env = GymVecEnv("Pendulum-v1", 8, seed=cfg["seed"])
(run_dir / "params").mkdir()
(run_dir / "params" / "agent.yaml").write_text(yaml.dump(cfg, sort_keys=False))
(run_dir / "params" / "env.yaml").write_text(yaml.dump(env.cfg, sort_keys=False))
torch.manual_seed(cfg["seed"])
runner = OnPolicyRunner(env, cfg, log_dir=None, device="cpu")
for _ in range(3):  # model_1.pt, model_2.pt, model_3.pt (each learn() goes on from the last iteration)
    runner.learn(2)
    runner.save(str(run_dir / f"model_{runner.current_learning_iteration}.pt"))
"""


@pytest.mark.trains
def test_rsl_rl_training_followed_by_zoo_watch_in_a_thread(tmp_path):
    run = tmp_path / "logs" / "rsl_rl" / "pendulum" / "2026-12-01_10-00-00"
    run.mkdir(parents=True)
    result = _train_while_watching(RSL_TRAINER, run, until=3, episodes=5, num_envs=5)
    saved = sorted(run.glob("model_*.pt"), key=lambda p: int(p.stem.split("_")[1]))
    assert result.framework == "rsl_rl" and [line["checkpoint"] for line in result.evaluations] == [
        p.name for p in saved
    ]
    meta = result.best
    assert (
        meta["files"] == ["best_model.pt"]
        and (run / "best_model.pt").read_bytes() == (run / meta["source_checkpoint"]).read_bytes()
    )
    again = _re_evaluated(run / "best_model.pt", meta, tmp_path / "again.json")  # the run's params/ are read
    assert again["episodes"] == meta["eval"]["episodes"] and again["task"] == "Pendulum-v1"
    latest = zoo("eval", run, "-n", "1", "--out", tmp_path / "latest.json", "-q")
    assert latest.exit_code == 0 and json.loads((tmp_path / "latest.json").read_text())["checkpoint"] == str(
        saved[-1]
    )


SKRL_TRAINER = """
import sys
from pathlib import Path

import torch
from skrl_helpers import gaussian_policy, ppo_cfg, train_isaac_lab_style

torch.set_num_threads(1)
experiment = Path(sys.argv[1])
cfg = ppo_cfg(gaussian_policy(), timesteps=256, experiment={"write_interval": 64, "checkpoint_interval": 64})
train_isaac_lab_style(cfg, experiment.parent, experiment.name, "Pendulum-v1")  # agent_64.pt ... agent_256.pt
"""


@pytest.mark.trains
def test_skrl_training_followed_by_zoo_watch_in_a_thread(tmp_path):
    """skrl's own Runner writes ``checkpoints/agent_{t}.pt`` (and its ``best_agent.pt``, which zoo leaves to
    skrl) while ``zoo.watch`` follows the experiment dir; the best re-evaluates to its recorded score."""
    run = tmp_path / "logs" / "skrl" / "pendulum" / "2026-12-01_10-00-00_ppo_torch"
    (run / "checkpoints").mkdir(parents=True)
    result = _train_while_watching(SKRL_TRAINER, run, until=256, episodes=4, num_envs=4, env_id="Pendulum-v1")
    assert result.framework == "skrl" and result.stopped == "until"
    assert [line["step"] for line in result.evaluations] == [64, 128, 192, 256]
    meta = result.best
    assert (run / "best_model.pt").read_bytes() == (run / meta["source_checkpoint"]).read_bytes()
    again = _re_evaluated(run / "best_model.pt", meta, tmp_path / "again.json", "--env-id", "Pendulum-v1")
    assert (
        again["metrics"]["return_mean"] == meta["return_mean"]
        and again["episodes"] == meta["eval"]["episodes"]
    )
    latest = zoo("eval", run, "--env-id", "Pendulum-v1", "-n", "1", "--out", tmp_path / "latest.json", "-q")
    assert latest.exit_code == 0
    assert json.loads((tmp_path / "latest.json").read_text())["checkpoint"] == str(
        run / "checkpoints" / "agent_256.pt"
    )


@pytest.mark.trains
def test_the_sb3_callback_records_what_zoo_watch_records(tmp_path):
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    from zoo.integrations.sb3 import ZooEvalCallback

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        env = VecNormalize(make_vec_env("CartPole-v1", n_envs=2, seed=0))
        model = PPO(
            "MlpPolicy",
            env,
            n_steps=128,
            batch_size=64,
            n_epochs=2,
            seed=0,
            device="cpu",
            policy_kwargs={"net_arch": [32, 32]},
        )
        model.learn(1024, callback=ZooEvalCallback(tmp_path / "run", eval_freq=128, episodes=10))
    finally:
        torch.set_num_threads(threads)
    run = tmp_path / "run"
    lines = read_records(run).lines
    assert [line["step"] for line in lines] == [256, 512, 768, 1024] and {
        line["checkpoint"] for line in lines
    } == {None}
    assert not list(run.glob(".zoo-callback-*")), "the snapshots' private folder is removed"
    meta = json.loads((run / BEST_META_FILE).read_text())
    best = max(lines, key=lambda line: line["metrics"]["return_mean"])
    assert (meta["step"], meta["return_mean"]) == (best["step"], best["metrics"]["return_mean"])
    stats = pickle.loads(
        (run / "best_model_vecnormalize.pkl").read_bytes()
    )  # trusted: this test's own training
    assert abs(stats.obs_rms.count - meta["step"]) <= 4, (
        "the training's statistics at that step, not the final ones"
    )
    assert abs(env.obs_rms.count - 1024) <= 4
    again = _re_evaluated(run / "best_model.zip", meta, tmp_path / "again.json")
    assert (
        again["metrics"]["return_mean"] == meta["return_mean"]
        and again["episodes"] == meta["eval"]["episodes"]
    )
