"""``zoo push`` of an rl_zoo3 run makes a repo that rl_zoo3's own ``load_from_hub`` reads back.

rl_zoo3's ``load_from_hub`` (rl_zoo3 2.9.2) downloads ``{algo}-{env_name}.zip``, ``config.yml``,
``args.yml``, ``env_kwargs.yml`` and ``train_eval_metrics.zip`` from the repo root, each with no
fallback, and ``vec_normalize.pkl`` when there is one. :mod:`zoo.frameworks.sb3.rlzoo_files` stages them
from the run folder; the unit tests below check it on hand-made folders, the others on a real
``rl_zoo3.train`` run pushed to ``zoo hub serve`` on 127.0.0.1, downloaded by
``python -m rl_zoo3.load_from_hub`` and played by ``python -m rl_zoo3.enjoy``.

Those need the real rl_zoo3 (and ``requests``, which ``rl_zoo3/load_from_hub.py`` imports although
neither rl_zoo3 nor huggingface_hub 2.x depends on it); they are skipped without them. With
huggingface_hub 2.x, ``load_from_hub`` stops on a repo without ``vec_normalize.pkl``: it catches
``requests.exceptions.HTTPError`` around that download, and huggingface_hub 2.x raises its own
``RemoteEntryNotFoundError`` (an ``httpx`` error). The run pushed here is therefore trained with
``normalize: True``; the run without statistics is read by rl_zoo3's ``download_from_hub`` with that
``except`` widened to huggingface_hub's error as well, the one change an upstream fix needs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from collections import OrderedDict
from importlib.util import find_spec
from pathlib import Path

import pytest
import yaml

from zoo.frameworks.sb3 import rlzoo_files as rz

HAS_RL_ZOO3 = find_spec("rl_zoo3") is not None and find_spec("requests") is not None
needs_rl_zoo3 = pytest.mark.skipif(
    not HAS_RL_ZOO3, reason="needs rl_zoo3 and requests: pip install 'rl_zoo3>=2.9.2,<3' requests"
)


def _zoo_yaml(path: Path, data: dict) -> Path:
    """Write ``data`` as rl_zoo3 does: ``yaml.dump`` of an OrderedDict (a python/object/apply tag)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.dump(OrderedDict(sorted(data.items()))))
    return path


def _fake_run(root: Path, env_id: str = "CartPole-v1", algo: str = "ppo", env_kwargs=None) -> Path:
    """An rl_zoo3 run folder ``logs/{algo}/{env_name}_1`` (the model's bytes are never read here)."""
    name = rz.env_name(env_id)
    run = root / "logs" / algo / f"{name}_1"
    _zoo_yaml(run / name / "config.yml", {"policy": "MlpPolicy", "n_timesteps": 1000.0})
    _zoo_yaml(run / name / "args.yml", {"algo": algo, "env": env_id, "env_kwargs": env_kwargs, "seed": 1})
    (run / f"{name}.zip").write_bytes(b"model")
    (run / "best_model.zip").write_bytes(b"best")
    (run / "evaluations.npz").write_bytes(b"npz bytes")
    (run / "0.monitor.csv").write_text("#{}\nr,l,t\n1.0,1,0.1\n")
    (run / "sub").mkdir()
    (run / "sub" / "deeper.csv").write_text("not taken\n")
    return run


# ----------------------------------------------------------------------------- the module alone
def test_env_name_is_huggingface_sb3s():
    assert rz.env_name("CartPole-v1") == "CartPole-v1"
    assert rz.env_name("ALE/Pong-v5") == "ALE-Pong-v5"
    assert rz.env_name("my_pkg:MyEnv-v0") == "MyEnv-v0"
    with pytest.raises(ValueError):
        rz.env_name("a:b:C-v0")
    if find_spec("huggingface_sb3") is not None:
        from huggingface_sb3 import EnvironmentName

        for env_id in ("CartPole-v1", "ALE/Pong-v5", "my_pkg:MyEnv-v0", "MiniGrid-Empty-5x5-v0"):
            assert rz.env_name(env_id) == EnvironmentName(env_id)


def test_run_folder_gives_every_file_load_from_hub_downloads(tmp_path):
    run = _fake_run(tmp_path, env_kwargs={"max_episode_steps": 100})
    files = rz.rlzoo_files(run / "CartPole-v1.zip", "CartPole-v1")
    assert files is not None and files.algo == "ppo" and files.model_name == "ppo-CartPole-v1.zip"
    assert files.copied == {
        "config.yml": run / "CartPole-v1" / "config.yml",
        "args.yml": run / "CartPole-v1" / "args.yml",
        "ppo-CartPole-v1.zip": run / "CartPole-v1.zip",
    }
    assert set(files.generated) == {"env_kwargs.yml", "train_eval_metrics.zip"}
    assert set(rz.REQUIRED) <= set(files.copied) | set(files.generated)
    assert yaml.safe_load(files.generated["env_kwargs.yml"]) == {"max_episode_steps": 100}
    written = rz.hub_files(run / "CartPole-v1.zip", "CartPole-v1", workdir=tmp_path / "work")
    with zipfile.ZipFile(written["train_eval_metrics.zip"]) as archive:
        assert archive.namelist() == ["evaluations.npz", "0.monitor.csv"]  # flat, not recursive
        assert archive.read("evaluations.npz") == b"npz bytes"
    assert written["env_kwargs.yml"].read_bytes() == files.generated["env_kwargs.yml"]
    # the same run gives the same bytes: a second push uploads nothing new
    assert rz.rlzoo_files(run / "CartPole-v1.zip", "CartPole-v1").generated == files.generated


def test_best_model_and_checkpoints_use_the_runs_config(tmp_path):
    run = _fake_run(tmp_path)
    files = rz.rlzoo_files(run / "best_model.zip", "CartPole-v1")
    assert files.copied["config.yml"] == run / "CartPole-v1" / "config.yml"
    assert files.copied["ppo-CartPole-v1.zip"] == run / "best_model.zip"


def test_env_ids_with_a_namespace_use_rl_zoo3s_folder_and_file_names(tmp_path):
    run = _fake_run(tmp_path, env_id="ALE/Pong-v5", algo="qrdqn")
    assert run.name == "ALE-Pong-v5_1"
    files = rz.rlzoo_files(run / "ALE-Pong-v5.zip", "ALE/Pong-v5")
    assert files.model_name == "qrdqn-ALE-Pong-v5.zip"
    assert files.copied["args.yml"] == run / "ALE-Pong-v5" / "args.yml"


def test_null_env_kwargs_are_an_empty_mapping(tmp_path):
    run = _fake_run(tmp_path, env_kwargs=None)
    assert rz.rlzoo_files(run / "CartPole-v1.zip", "CartPole-v1").generated["env_kwargs.yml"] == b"{}\n"


@pytest.mark.parametrize(
    "damage",
    [
        lambda run: (run / "CartPole-v1" / "config.yml").unlink(),
        lambda run: (run / "CartPole-v1" / "args.yml").unlink(),
        lambda run: _zoo_yaml(run / "CartPole-v1" / "args.yml", {"algo": "ppo", "env": "Pendulum-v1"}),
        lambda run: (run / "CartPole-v1" / "args.yml").write_text("just: [unclosed\n"),
    ],
    ids=["no-config", "no-args", "other-env", "broken-args"],
)
def test_models_outside_an_rl_zoo3_run_get_nothing(tmp_path, damage):
    run = _fake_run(tmp_path)
    damage(run)
    assert rz.rlzoo_files(run / "CartPole-v1.zip", "CartPole-v1") is None
    assert rz.hub_files(run / "CartPole-v1.zip", "CartPole-v1", workdir=tmp_path / "w") == {}
    assert not (tmp_path / "w").exists()


def test_python_tags_in_args_are_never_built(tmp_path):
    canary = tmp_path / "canary"
    run = _fake_run(tmp_path)
    (run / "CartPole-v1" / "args.yml").write_text(
        "!!python/object/apply:collections.OrderedDict\n"
        "- - [algo, ppo]\n  - [env, CartPole-v1]\n"
        f"  - [env_kwargs, {{evil: !!python/object/apply:os.system ['touch {canary}'], ok: 3}}]\n"
    )
    files = rz.rlzoo_files(run / "CartPole-v1.zip", "CartPole-v1")
    assert yaml.safe_load(files.generated["env_kwargs.yml"]) == {"evil": None, "ok": 3}
    assert not canary.exists()


def test_a_downloaded_repo_pushed_again_keeps_its_own_files(tmp_path):
    repo = tmp_path / "repo"
    _zoo_yaml(repo / "config.yml", {"policy": "MlpPolicy"})
    _zoo_yaml(repo / "args.yml", {"algo": "ppo", "env": "CartPole-v1", "env_kwargs": None})
    (repo / "env_kwargs.yml").write_text("render_mode: rgb_array\n")
    (repo / "train_eval_metrics.zip").write_bytes(b"PK\x05\x06" + b"\0" * 18)
    (repo / "ppo-CartPole-v1.zip").write_bytes(b"model")
    files = rz.rlzoo_files(repo / "ppo-CartPole-v1.zip", "CartPole-v1")
    assert files.generated == {}
    assert set(files.copied) == {*rz.REQUIRED, "ppo-CartPole-v1.zip"}
    assert all(path.parent == repo for path in files.copied.values())


def test_symlinked_metrics_leaving_the_run_are_not_zipped(tmp_path):
    run = _fake_run(tmp_path)
    outside = tmp_path / "outside.csv"
    outside.write_text("secret,1\n")
    (run / "1.monitor.csv").symlink_to(outside)
    data = rz.rlzoo_files(run / "CartPole-v1.zip", "CartPole-v1").generated["train_eval_metrics.zip"]
    (tmp_path / "m.zip").write_bytes(data)
    with zipfile.ZipFile(tmp_path / "m.zip") as archive:
        assert archive.namelist() == ["evaluations.npz", "0.monitor.csv"]


def test_the_sb3_adapter_hands_them_to_zoo_push(tmp_path):
    from zoo.frameworks import get_adapter

    run = _fake_run(tmp_path)
    staged = get_adapter("sb3").hub_files(run / "CartPole-v1.zip", "CartPole-v1", tmp_path / "work")
    assert set(rz.REQUIRED) <= set(staged)
    assert all(path.is_file() for path in staged.values())


# ----------------------------------------------------------------------------- real rl_zoo3
def _env(tmp_path: Path, home: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "ZOO_ALLOW", "TRUST_REMOTE"))}
    env.update(HF_HUB_DISABLE_XET="1", HF_HUB_DISABLE_TELEMETRY="1", HF_HOME=str(tmp_path / home))
    return env


def _run(cmd: list, cwd: Path, env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    shown = " ".join(map(str, cmd))
    assert proc.returncode == 0, f"{shown} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture
def hub(tmp_path):
    from zoo.hub_server.server import HubServer

    server = HubServer(tmp_path / "hub-root").start()  # open access: anyone may write, as in dev.py demo
    yield server
    server.stop()


def _train(tmp_path: Path, *hyperparams: str) -> Path:
    """``python -m rl_zoo3.train``: 256 PPO steps on CartPole-v1, evaluated every 128 steps."""
    work = tmp_path / "train"
    work.mkdir()
    _run(
        [
            sys.executable,
            "-m",
            "rl_zoo3.train",
            "--algo",
            "ppo",
            "--env",
            "CartPole-v1",
            "-n",
            "256",
            "-f",
            "logs",
            "--seed",
            "1",
            "--num-threads",
            "1",
            "--eval-freq",
            "128",
            "--eval-episodes",
            "2",
            "--n-eval-envs",
            "1",
            "--hyperparams",
            "n_envs:1",
            "n_steps:128",
            "n_epochs:1",
            "batch_size:64",
            *hyperparams,
        ],
        work,
        _env(tmp_path, "train-home"),
    )
    run = work / "logs" / "ppo" / "CartPole-v1_1"
    assert (run / "CartPole-v1.zip").is_file() and (run / "CartPole-v1" / "config.yml").is_file()
    return run


def _push(tmp_path: Path, hub, run: Path, repo: str) -> set[str]:
    env = _env(tmp_path, "pusher") | {"HF_ENDPOINT": hub.url}
    proc = _run(
        [
            sys.executable,
            "-m",
            "zoo",
            "push",
            run,
            "--repo-id",
            repo,
            "--yes",
            "--eval-episodes",
            "2",
            "--stage-dir",
            tmp_path / "stage",
            "--json",
        ],
        tmp_path,
        env,
    )
    return {f["name"] for f in json.loads(proc.stdout)["files"]}


def _enjoy(tmp_path: Path, folder: Path) -> str:
    proc = _run(
        [
            sys.executable,
            "-m",
            "rl_zoo3.enjoy",
            "--algo",
            "ppo",
            "--env",
            "CartPole-v1",
            "-f",
            folder,
            "--exp-id",
            "1",
            "-n",
            "200",
            "--no-render",
            "--num-threads",
            "1",
        ],
        tmp_path,
        _env(tmp_path, "enjoy-home"),
    )
    assert "Mean reward" in proc.stdout, proc.stdout[-2000:]
    return proc.stdout


@pytest.mark.trains  # rl_zoo3.train, a few hundred steps
@needs_rl_zoo3
def test_rl_zoo3_load_from_hub_reads_a_zoo_pushed_run(hub, tmp_path):
    run = _train(tmp_path, "normalize:True")
    staged = _push(tmp_path, hub, run, "demo/ppo-CartPole-v1")
    assert {*rz.REQUIRED, "ppo-CartPole-v1.zip", "vec_normalize.pkl"} <= staged

    env = _env(tmp_path, "fresh-cache") | {"HF_ENDPOINT": hub.url, "TRUST_REMOTE_CODE": "True"}
    _run(
        [
            sys.executable,
            "-m",
            "rl_zoo3.load_from_hub",
            "--algo",
            "ppo",
            "--env",
            "CartPole-v1",
            "-f",
            tmp_path / "downloaded",
            "-orga",
            "demo",
        ],
        tmp_path,
        env,
    )
    got = tmp_path / "downloaded" / "ppo" / "CartPole-v1_1"
    for name in (
        "CartPole-v1.zip",
        "CartPole-v1/config.yml",
        "CartPole-v1/args.yml",
        "CartPole-v1/vecnormalize.pkl",
        "evaluations.npz",
        "0.monitor.csv",
    ):
        assert (got / name).read_bytes() == (run / name).read_bytes(), name
    assert yaml.safe_load((got / "CartPole-v1" / "env_kwargs.yml").read_text()) == {}

    _enjoy(tmp_path, tmp_path / "downloaded")  # rl_zoo3 reads config.yml, args.yml and the statistics back
    from rl_zoo3.utils import get_saved_hyperparams

    hyperparams, stats_path = get_saved_hyperparams(str(got / "CartPole-v1"), test_mode=True)
    assert hyperparams["normalize"] is True and stats_path == str(got / "CartPole-v1")


DOWNLOAD_WITH_HF_HUB_2_ERRORS = """
import sys
import huggingface_hub.errors, requests.exceptions
import rl_zoo3.load_from_hub as lfh
from huggingface_sb3 import EnvironmentName
# rl_zoo3 catches only requests' HTTPError around vec_normalize.pkl; huggingface_hub 2.x raises its own
lfh.HTTPError = (requests.exceptions.HTTPError, huggingface_hub.errors.EntryNotFoundError)
lfh.download_from_hub("ppo", EnvironmentName("CartPole-v1"), 0, sys.argv[1], "demo", "ppo-CartPole-v1-plain")
"""


@pytest.mark.trains  # rl_zoo3.train, a few hundred steps
@needs_rl_zoo3
def test_a_run_without_vecnormalize_loads_once_rl_zoo3_catches_hf_hub_2_errors(hub, tmp_path):
    run = _train(tmp_path)
    staged = _push(tmp_path, hub, run, "demo/ppo-CartPole-v1-plain")
    assert {*rz.REQUIRED, "ppo-CartPole-v1.zip"} <= staged and "vec_normalize.pkl" not in staged
    env = _env(tmp_path, "fresh-cache") | {"HF_ENDPOINT": hub.url, "TRUST_REMOTE_CODE": "True"}
    proc = _run([sys.executable, "-c", DOWNLOAD_WITH_HF_HUB_2_ERRORS, tmp_path / "downloaded"], tmp_path, env)
    assert "No normalization file" in proc.stdout
    got = tmp_path / "downloaded" / "ppo" / "CartPole-v1_1"
    for name in ("CartPole-v1.zip", "CartPole-v1/config.yml", "CartPole-v1/args.yml", "evaluations.npz"):
        assert (got / name).read_bytes() == (run / name).read_bytes(), name
    assert not (got / "CartPole-v1" / "vecnormalize.pkl").exists()
    _enjoy(tmp_path, tmp_path / "downloaded")
