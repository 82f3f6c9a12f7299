"""zoo's CleanRL model classes against the real cleanrl 1.2.0 wheel.

``zoo.frameworks.cleanrl.models`` re-implements the ``nn.Module`` classes that
live inside CleanRL's single-file training scripts. These tests download the
real ``cleanrl==1.2.0`` wheel from PyPI (cached under ``.cache/cleanrl-wheel/``,
pinned by sha256), import each script as a module without running its
``__main__`` block, and check, for every experiment of zoo's registry that the
wheel ships:

* the same state-dict keys, in the same order, with the same shapes and dtypes,
  and the same constructor-computed buffers (``atoms``, ``action_scale``,
  ``action_bias``), on real gymnasium spaces;
* that the wheel model's state dict loads into zoo's class with ``strict=True``
  and then gives the same outputs on a random batch.

``qdagger_dqn_atari_impalacnn`` is not in the 1.2.0 wheel: its expected keys and
forward pass are transcribed by hand from upstream's script.

Finally the wheel's own ``dqn.py`` is run as a subprocess (a few hundred steps
on CartPole-v1, ``--save-model True``) and ``zoo check`` / ``zoo eval`` must
accept the run it writes. ``dqn.py`` trains and saves fine on gymnasium 1.4 (its
``infos["final_info"]`` logging is silently skipped; a truncation, which would
hit the missing ``infos["final_observation"]``, needs a 500-step episode, which
the mostly random policy of a 600-step run does not reach).
Its tail then calls ``cleanrl_utils.evals.dqn_eval.evaluate``, which on
gymnasium >= 1.0 either fails at once (video capture without pygame) or never
returns (it counts episodes from ``infos["final_info"]``, which gymnasium 1.x no
longer emits). So the test stops the script as soon as it printed ``model saved
to`` (printed after ``torch.save`` returned); a script that exits by itself with
an error is accepted only if the error is in ``dqn_eval``, after the save.

The other 1.2.0 scripts that save a model cannot run here, so they are not run:

* ``c51.py`` targets the pre-0.26 gym API: ``env.seed(seed)`` in ``make_env``
  (removed from gymnasium), ``obs = envs.reset()`` and
  ``next_obs, rewards, dones, infos = envs.step(...)`` (gymnasium returns
  2- and 5-tuples) and a list of per-env ``infos`` with ``terminal_observation``.
  Old ``gym`` (< 0.26) is not part of this environment. Its save format,
  ``{"model_weights": q_network.state_dict(), "args": vars(args)}``, is instead
  reproduced with the wheel's own ``QNetwork`` and the wheel's own ``parse_args()``
  (non-default ``--n-atoms/--v-min/--v-max``), and zoo must check and evaluate it.
* ``dqn_atari.py`` / ``c51_atari.py`` use ``gym.wrappers.GrayScaleObservation``
  and ``gym.wrappers.FrameStack``, renamed in gymnasium 1.0, never
  ``import ale_py`` (so ``BreakoutNoFrameskip-v4`` is not registered in
  gymnasium 1.x) and ``ResizeObservation`` needs OpenCV; ``c51_atari.py`` also
  uses the old gym API like ``c51.py``.
* ``ppo_continuous_action.py``, ``ddpg_continuous_action.py`` and
  ``td3_continuous_action.py`` in 1.2.0 have no ``--save-model`` at all.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import gymnasium
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from click.testing import CliRunner

from zoo.cli import cli
from zoo.frameworks.cleanrl.checkpoint import model_class, vector_env_view
from zoo.registry import load_registry

REPO_ROOT = Path(__file__).resolve().parents[1]
WHEEL_CACHE = REPO_ROOT / ".cache" / "cleanrl-wheel"
WHEEL_NAME = "cleanrl-1.2.0-py3-none-any.whl"
WHEEL_SHA256 = "002f6dac6cd0efb5889cd9096a252da1b4bc98a8f52ccb1f47a7215c18b30369"


# ----------------------------------------------------------------------------- the wheel
def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _download_wheel() -> Path:
    cached = WHEEL_CACHE / WHEEL_NAME
    if cached.is_file() and _sha256(cached) == WHEEL_SHA256:
        return cached
    WHEEL_CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=WHEEL_CACHE) as tmp:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--ignore-requires-python",
            "--disable-pip-version-check",
            "--no-input",
            "cleanrl==1.2.0",
            "-d",
            tmp,
        ]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            pytest.fail(
                f"downloading the cleanrl 1.2.0 wheel timed out after 300 s: {' '.join(cmd)}", pytrace=False
            )
        downloaded = Path(tmp) / WHEEL_NAME
        if proc.returncode != 0 or not downloaded.is_file():
            pytest.fail(
                f"could not download the cleanrl 1.2.0 wheel (exit {proc.returncode}); these tests need it.\n"
                f"command: {' '.join(cmd)}\nstdout:\n{proc.stdout[-2000:]}\nstderr:\n{proc.stderr[-2000:]}",
                pytrace=False,
            )
        digest = _sha256(downloaded)
        if digest != WHEEL_SHA256:
            pytest.fail(
                f"downloaded {WHEEL_NAME} has sha256 {digest}, expected {WHEEL_SHA256}", pytrace=False
            )
        os.replace(downloaded, cached)  # atomic: parallel workers never see half a file
    return cached


@pytest.fixture(scope="session")
def cleanrl_wheel_dir(tmp_path_factory) -> Path:
    """The extracted ``cleanrl/`` folder of the real cleanrl 1.2.0 wheel (its parent holds ``cleanrl_utils``)."""
    wheel = _download_wheel()
    root = tmp_path_factory.mktemp("cleanrl-1.2.0")
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(root)
    scripts = root / "cleanrl"
    assert (scripts / "dqn.py").is_file(), f"{wheel} has no cleanrl/dqn.py"
    return scripts


@contextlib.contextmanager
def _gym_is_gymnasium():
    """``import gym`` gives gymnasium while the block runs; sys.modules is restored afterwards."""
    missing = object()
    saved = sys.modules.get("gym", missing)
    sys.modules["gym"] = gymnasium
    try:
        yield
    finally:
        if saved is missing:
            sys.modules.pop("gym", None)
        else:
            sys.modules["gym"] = saved


@functools.cache
def _load_script(scripts_dir: Path, script: str):
    """Import ``cleanrl/<script>.py`` as a module; its ``if __name__ == "__main__"`` block does not run."""
    path = scripts_dir / f"{script}.py"
    spec = importlib.util.spec_from_file_location(f"_cleanrl_1_2_0_{script}", path)
    module = importlib.util.module_from_spec(spec)
    with _gym_is_gymnasium():
        spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def wheel_script(cleanrl_wheel_dir):
    return functools.partial(_load_script, cleanrl_wheel_dir)


# ----------------------------------------------------------------------------- spaces
@functools.cache
def _env_spaces(env_id: str) -> tuple:
    env = gymnasium.make(env_id)
    try:
        return env.observation_space, env.action_space
    finally:
        env.close()


ATARI_OBS = gymnasium.spaces.Box(0, 255, (4, 84, 84), np.uint8)
SPACES = {
    "CartPole-v1": lambda: _env_spaces("CartPole-v1"),
    "Acrobot-v1": lambda: _env_spaces("Acrobot-v1"),
    "Pendulum-v1": lambda: _env_spaces("Pendulum-v1"),
    "MountainCarContinuous-v0": lambda: _env_spaces("MountainCarContinuous-v0"),
    "atari-4-actions": lambda: (ATARI_OBS, gymnasium.spaces.Discrete(4)),
    "atari-6-actions": lambda: (ATARI_OBS, gymnasium.spaces.Discrete(6)),
    # HalfCheetah-sized spaces with asymmetric, per-dimension bounds, so that action_bias != 0
    # and a transposed or mis-sized action dimension cannot hide behind a 1-d action space.
    "box17-act6-asymmetric": lambda: (
        gymnasium.spaces.Box(-np.inf, np.inf, (17,), np.float64),
        gymnasium.spaces.Box(
            np.array([-1.0, 0.0, -3.0, -0.5, 2.0, -10.0], np.float32),
            np.array([2.0, 1.0, 3.0, 0.0, 4.0, -2.0], np.float32),
            dtype=np.float32,
        ),
    ),
}
CLASSIC_DISCRETE = ("CartPole-v1", "Acrobot-v1")
ATARI = ("atari-4-actions", "atari-6-actions")
CONTINUOUS = ("Pendulum-v1", "MountainCarContinuous-v0", "box17-act6-asymmetric")
C51_KWARGS = ({}, {"n_atoms": 51, "v_min": -10.0, "v_max": 10.0})

# registry experiment -> (wheel script, {registry part: wheel class}, how to compare outputs)
WHEEL_EXPERIMENTS = {
    "dqn": ("dqn", {"q_network": "QNetwork"}, "q_values"),
    "dqn_atari": ("dqn_atari", {"q_network": "QNetwork"}, "q_values"),
    "c51": ("c51", {"q_network": "QNetwork"}, "c51"),
    "c51_atari": ("c51_atari", {"q_network": "QNetwork"}, "c51"),
    "ppo_continuous_action": ("ppo_continuous_action", {"agent": "Agent"}, "ppo"),
    "ddpg_continuous_action": ("ddpg_continuous_action", {"actor": "Actor", "qf1": "QNetwork"}, None),
    "td3_continuous_action": (
        "td3_continuous_action",
        {"actor": "Actor", "qf1": "QNetwork", "qf2": "QNetwork"},
        None,
    ),
}
NOT_IN_WHEEL = {"qdagger_dqn_atari_impalacnn"}  # checked by hand against upstream below


def _cases():
    cases = []

    def add(exp, part, space_names, kwargs_list=({},)):
        for space in space_names:
            for kwargs in kwargs_list:
                suffix = "-" + "-".join(f"{k}={v}" for k, v in kwargs.items()) if kwargs else ""
                cases.append(pytest.param(exp, part, space, kwargs, id=f"{exp}-{part}-{space}{suffix}"))

    add("dqn", "q_network", CLASSIC_DISCRETE)
    add("dqn_atari", "q_network", ATARI)
    add("c51", "q_network", CLASSIC_DISCRETE, C51_KWARGS)
    add("c51_atari", "q_network", ATARI, C51_KWARGS)
    add("ppo_continuous_action", "agent", CONTINUOUS)
    for exp, parts in (
        ("ddpg_continuous_action", ("actor", "qf1")),
        ("td3_continuous_action", ("actor", "qf1", "qf2")),
    ):
        for part in parts:
            add(exp, part, CONTINUOUS)
    return cases


CASES = _cases()


@pytest.fixture(scope="module")
def registry():
    return load_registry()


@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread():
    """Tiny models: a second intra-op thread only adds contention on a busy 2-core machine."""
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(saved)


def _build_pair(registry, wheel_script, exp, part, space, kwargs):
    script, classes, _ = WHEEL_EXPERIMENTS[exp]
    envs = vector_env_view(*SPACES[space]())
    torch.manual_seed(0)
    wheel_model = getattr(wheel_script(script), classes[part])(envs, **kwargs)
    zoo_model = model_class(registry.get(exp), part)(envs, **kwargs)
    return envs, wheel_model, zoo_model


def _scramble(model: torch.nn.Module) -> None:
    """Random O(1)-output parameters, so no output is tiny (PPO's last layer starts at std 0.01)."""
    gen = torch.Generator().manual_seed(1234)
    with torch.no_grad():
        for p in model.parameters():
            std = 1.0 / math.sqrt(p[0].numel()) if p.dim() > 1 else 0.3
            p.copy_(torch.randn(p.shape, generator=gen) * std)


def _obs_batch(envs, n: int = 7) -> torch.Tensor:
    gen = torch.Generator().manual_seed(99)
    shape = (n, *envs.single_observation_space.shape)
    if envs.single_observation_space.dtype == np.uint8:
        # Atari frames, fed to the network as the scripts do: float 0..255
        return torch.randint(0, 256, shape, generator=gen).float()
    return torch.randn(shape, generator=gen) * 2.0


def _act_batch(envs, n: int = 7) -> torch.Tensor:
    space = envs.single_action_space
    gen = torch.Generator().manual_seed(7)
    low, high = torch.tensor(space.low), torch.tensor(space.high)
    return low + (high - low) * torch.rand((n, *space.shape), generator=gen)


# ----------------------------------------------------------------------------- coverage
def test_every_registry_experiment_is_covered(registry, cleanrl_wheel_dir):
    cleanrl_entries = {  # the JAX scripts' entries are proven against flax in tests/test_cleanrl_flax_models.py
        name
        for name in registry.names()
        if registry.get(name).framework == "cleanrl" and registry.get(name).layout["kind"] != "flax"
    }
    uncovered = cleanrl_entries - set(WHEEL_EXPERIMENTS) - NOT_IN_WHEEL
    assert not uncovered, f"registry experiments with no compatibility test: {sorted(uncovered)}"
    for name in cleanrl_entries & set(WHEEL_EXPERIMENTS):
        script, classes, _ = WHEEL_EXPERIMENTS[name]
        assert (cleanrl_wheel_dir / f"{script}.py").is_file(), f"{script}.py missing from the wheel"
        assert set(classes) == set(registry.get(name).parts) == set(registry.get(name).model), name
        tested = {p.values[1] for p in CASES if p.values[0] == name}
        assert tested == set(classes), f"{name}: parts {sorted(set(classes) - tested)} have no case"
    for name in NOT_IN_WHEEL:
        assert not (cleanrl_wheel_dir / f"{name}.py").exists(), (
            f"{name}.py is in the wheel now: test it there"
        )


# ----------------------------------------------------------------------------- shapes
@pytest.mark.parametrize(("exp", "part", "space", "kwargs"), CASES)
def test_state_dict_layout_matches_wheel(registry, wheel_script, exp, part, space, kwargs):
    _envs, wheel_model, zoo_model = _build_pair(registry, wheel_script, exp, part, space, kwargs)
    wheel_sd, zoo_sd = wheel_model.state_dict(), zoo_model.state_dict()
    assert list(zoo_sd) == list(wheel_sd)
    assert {k: tuple(v.shape) for k, v in zoo_sd.items()} == {k: tuple(v.shape) for k, v in wheel_sd.items()}
    assert {k: v.dtype for k, v in zoo_sd.items()} == {k: v.dtype for k, v in wheel_sd.items()}
    # Buffers are computed by the constructor from the env/kwargs (atoms, action_scale, action_bias).
    wheel_buffers, zoo_buffers = dict(wheel_model.named_buffers()), dict(zoo_model.named_buffers())
    assert list(zoo_buffers) == list(wheel_buffers)
    for name, buf in wheel_buffers.items():
        torch.testing.assert_close(zoo_buffers[name], buf, rtol=0, atol=0, msg=f"buffer {name} differs")
    assert [n for n, _ in zoo_model.named_parameters()] == [n for n, _ in wheel_model.named_parameters()]


# ----------------------------------------------------------------------------- outputs
def _c51_parts(model, x, scale):
    logits = model.network(x / scale)
    pmfs = torch.softmax(logits.view(len(x), model.n, model.n_atoms), dim=2)
    return pmfs, (pmfs * model.atoms).sum(2)


@pytest.mark.parametrize(("exp", "part", "space", "kwargs"), CASES)
def test_wheel_weights_load_strict_and_give_same_outputs(registry, wheel_script, exp, part, space, kwargs):
    envs, wheel_model, zoo_model = _build_pair(registry, wheel_script, exp, part, space, kwargs)
    _scramble(wheel_model)
    result = zoo_model.load_state_dict(wheel_model.state_dict(), strict=True)
    assert not result.missing_keys and not result.unexpected_keys
    for key, value in wheel_model.state_dict().items():
        assert torch.equal(zoo_model.state_dict()[key], value), key
    wheel_model.eval(), zoo_model.eval()
    x = _obs_batch(envs)
    head = WHEEL_EXPERIMENTS[exp][2]
    close = functools.partial(torch.testing.assert_close, rtol=1e-5, atol=1e-6)
    with torch.no_grad():
        if head == "q_values":
            q = zoo_model(x)
            assert q.shape == (len(x), envs.single_action_space.n)
            close(q, wheel_model(x))
        elif head == "c51":
            scale = 255.0 if space in ATARI else 1.0
            wheel_action, wheel_pmf = wheel_model.get_action(x)
            wheel_pmfs, wheel_q = _c51_parts(wheel_model, x, scale)
            # our reading of the wheel's head, before comparing zoo's with it
            close(wheel_pmf, wheel_pmfs[torch.arange(len(x)), wheel_action])
            zoo_q = zoo_model(x)
            assert zoo_q.shape == (len(x), envs.single_action_space.n)
            close(zoo_q, wheel_q)
            assert torch.equal(zoo_q.argmax(1), wheel_action)
            zoo_pmfs, _ = _c51_parts(zoo_model, x, scale)
            close(zoo_pmfs[torch.arange(len(x)), wheel_action], wheel_pmf)
            # an explicit action, as the training loss calls it
            actions = torch.arange(len(x)) % envs.single_action_space.n
            _, wheel_pmf_a = wheel_model.get_action(x, actions)
            close(zoo_pmfs[torch.arange(len(x)), actions], wheel_pmf_a)
        elif head == "ppo":
            close(zoo_model.actor_mean(x), wheel_model.actor_mean(x))
            close(zoo_model(x), wheel_model.actor_mean(x))  # zoo's deterministic action is the mean
            close(zoo_model.critic(x), wheel_model.get_value(x))
            actions = _act_batch(envs)
            _, logprob, entropy, value = wheel_model.get_action_and_value(x, actions)
            dist = torch.distributions.Normal(zoo_model.actor_mean(x), zoo_model.actor_logstd.exp())
            close(dist.log_prob(actions).sum(1), logprob)
            close(dist.entropy().sum(1), entropy)
            close(zoo_model.critic(x), value)
        elif part == "actor":
            out = zoo_model(x)
            close(out, wheel_model(x))
            low, high = (
                torch.tensor(b) for b in (envs.single_action_space.low, envs.single_action_space.high)
            )
            assert out.shape == (len(x), *envs.single_action_space.shape)
            assert (out >= low - 1e-5).all() and (out <= high + 1e-5).all()
        else:  # continuous critic Q(s, a)
            a = _act_batch(envs)
            q = zoo_model(x, a)
            assert q.shape == (len(x), 1)
            close(q, wheel_model(x, a))


# ----------------------------------------------------------------------------- qdagger (not in 1.2.0)
def _impala_expected(n_actions: int) -> list[tuple[str, tuple]]:
    """Upstream ``qdagger_dqn_atari_impalacnn.py``'s QNetwork, by hand.

    ``network`` = Sequential(ConvSequence(4->16), ConvSequence(16->32), ConvSequence(32->32),
    Flatten, ReLU, Linear(32*11*11, 256), ReLU, Linear(256, n)); each ConvSequence has ``conv``
    (3x3, padding 1) then max-pool 3/2/1, ``res_block0`` and ``res_block1`` (``conv0``, ``conv1``,
    3x3 same-channel). 84 -> 42 -> 21 -> 11, so the Linears sit at indices 5 and 7.
    """
    keys = []
    for i, (c_in, c_out) in enumerate(((4, 16), (16, 32), (32, 32))):
        keys += [(f"network.{i}.conv.weight", (c_out, c_in, 3, 3)), (f"network.{i}.conv.bias", (c_out,))]
        for block in ("res_block0", "res_block1"):
            for conv in ("conv0", "conv1"):
                keys += [
                    (f"network.{i}.{block}.{conv}.weight", (c_out, c_out, 3, 3)),
                    (f"network.{i}.{block}.{conv}.bias", (c_out,)),
                ]
    keys += [("network.5.weight", (256, 32 * 11 * 11)), ("network.5.bias", (256,))]
    keys += [("network.7.weight", (n_actions, 256)), ("network.7.bias", (n_actions,))]
    return keys


def _impala_reference_forward(sd: dict, x: torch.Tensor) -> torch.Tensor:
    """Upstream's forward pass, written with functional ops over the state dict."""
    x = x / 255.0
    for i in range(3):
        p = f"network.{i}."
        x = F.conv2d(x, sd[p + "conv.weight"], sd[p + "conv.bias"], padding=1)
        x = F.max_pool2d(x, kernel_size=3, stride=2, padding=1)
        for block in ("res_block0", "res_block1"):
            b = f"{p}{block}."
            h = F.conv2d(F.relu(x), sd[b + "conv0.weight"], sd[b + "conv0.bias"], padding=1)
            x = x + F.conv2d(F.relu(h), sd[b + "conv1.weight"], sd[b + "conv1.bias"], padding=1)
    x = F.relu(torch.flatten(x, 1))
    x = F.relu(F.linear(x, sd["network.5.weight"], sd["network.5.bias"]))
    return F.linear(x, sd["network.7.weight"], sd["network.7.bias"])


@pytest.mark.parametrize("space", ATARI)
def test_impala_q_network_matches_upstream_layout_and_forward(registry, space):
    envs = vector_env_view(*SPACES[space]())
    n = envs.single_action_space.n
    entry = registry.get("qdagger_dqn_atari_impalacnn")
    assert entry.parts == ["q_network"]
    torch.manual_seed(0)
    model = model_class(entry, "q_network")(envs)
    found = [(k, tuple(v.shape)) for k, v in model.state_dict().items()]
    assert found == _impala_expected(n)
    _scramble(model)
    model.eval()
    x = _obs_batch(envs, n=3)
    with torch.no_grad():
        expected = _impala_reference_forward(model.state_dict(), x)
        torch.testing.assert_close(model(x), expected, rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- real training output
DQN_ARGS = [
    "--env-id",
    "CartPole-v1",
    "--total-timesteps",
    "600",
    "--learning-starts",
    "200",
    "--train-frequency",
    "1",
    "--save-model",
    "True",
    "--capture-video",
    "False",
    "--cuda",
    "False",
    "--seed",
    "1",
]


def _run_until_saved(cmd: list[str], cwd: Path, env: dict, timeout: float) -> tuple[int, str, str, bool]:
    """Run a CleanRL script; stop it once it printed ``model saved to`` (its eval tail may never end).

    Returns (exit code, stdout, stderr, whether the test stopped it).
    """
    out_path, err_path = cwd / "script.stdout", cwd / "script.stderr"
    stopped = False
    with out_path.open("w") as out, err_path.open("w") as err:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=err)
        deadline = time.monotonic() + timeout
        try:
            while proc.poll() is None and time.monotonic() < deadline:
                if "model saved to" in out_path.read_text():  # printed after torch.save returned
                    break
                time.sleep(0.1)
        finally:
            if proc.poll() is None:
                stopped = True
                proc.kill()
            proc.wait()
    return proc.returncode, out_path.read_text(), err_path.read_text(), stopped


@pytest.fixture(scope="module")
def dqn_real_run(cleanrl_wheel_dir, wheel_script, tmp_path_factory, monkeypatch_module):
    """Run the wheel's own ``dqn.py`` for 600 steps; the run dir it wrote under ``runs/``."""
    # The flags exist in this script: its own parser accepts them (argparse exits 2 otherwise).
    monkeypatch_module.setattr(sys, "argv", ["dqn.py", *DQN_ARGS])
    args = wheel_script("dqn").parse_args()
    assert (args.save_model, args.total_timesteps, args.learning_starts) == (True, 600, 200)
    monkeypatch_module.undo()

    cwd = tmp_path_factory.mktemp("dqn-real")
    env = {k: v for k, v in os.environ.items() if k not in ("ZOO_REGISTRY", "PYTHONSTARTUP")}
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(cleanrl_wheel_dir.parent), env.get("PYTHONPATH")) if p
    )
    env["CUDA_VISIBLE_DEVICES"] = ""
    # torch's default of one thread per core thrashes on a loaded 2-core machine: 50 instead of 1500 SPS
    env["OMP_NUM_THREADS"] = "1"
    env["PYTHONUNBUFFERED"] = "1"  # "model saved to" must reach the log as soon as it is printed
    rc, stdout, stderr, stopped = _run_until_saved(
        [sys.executable, str(cleanrl_wheel_dir / "dqn.py"), *DQN_ARGS], cwd, env, timeout=240
    )
    runs = sorted((cwd / "runs").glob("CartPole-v1__dqn__1__*")) if (cwd / "runs").is_dir() else []
    model = runs[0] / "dqn.cleanrl_model" if len(runs) == 1 else None
    log = f"exit {rc}, stopped by the test: {stopped}\nstdout:\n{stdout[-3000:]}\nstderr:\n{stderr[-3000:]}"
    assert "model saved to" in stdout, f"dqn.py did not save its model (240 s limit)\n{log}"
    assert model is not None and model.is_file(), f"dqn.py wrote no model under {cwd}/runs\n{log}"
    # Training really ran: the script prints SPS every 100 steps once learning has started.
    assert stdout.count("SPS:") >= 3, log
    if not stopped and rc != 0:
        # Only the post-save evaluation (cleanrl_utils.evals.dqn_eval) may fail.
        assert "dqn_eval" in stderr, f"dqn.py failed before/while saving, not in its evaluation tail\n{log}"
    return runs[0]


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def _zoo(*args: str):
    """``zoo ARGS`` in-process, on the bundled registry only."""
    return CliRunner().invoke(cli, list(args), env={"ZOO_REGISTRY": None}, catch_exceptions=False)


def test_real_dqn_state_dict_loads_into_zoo_class(dqn_real_run, registry, wheel_script):
    sd = torch.load(dqn_real_run / "dqn.cleanrl_model", map_location="cpu", weights_only=True)
    envs = vector_env_view(*SPACES["CartPole-v1"]())
    zoo_model = model_class(registry.get("dqn"), "q_network")(envs)
    wheel_model = wheel_script("dqn").QNetwork(envs)
    assert list(sd) == list(zoo_model.state_dict())
    zoo_model.load_state_dict(sd, strict=True)
    wheel_model.load_state_dict(sd, strict=True)
    x = _obs_batch(envs)
    with torch.no_grad():
        torch.testing.assert_close(zoo_model(x), wheel_model(x), rtol=1e-5, atol=1e-6)


def test_zoo_check_accepts_real_dqn_run(dqn_real_run):
    result = _zoo("check", str(dqn_real_run.parent), "--json")
    assert result.exit_code == 0, result.output
    reports = json.loads(result.stdout)
    assert len(reports) == 1, reports
    report = reports[0]
    assert report["status"] == "ok", report
    assert report["run"]["exp_name"] == "dqn" and report["run"]["env_id"] == "CartPole-v1"
    assert report["run"]["seed"] == 1
    assert Path(report["run"]["model_file"]) == dqn_real_run / "dqn.cleanrl_model"
    assert report["run"]["events_file"] is not None  # dqn.py's SummaryWriter wrote it
    assert report["details"]["weights_only"] is True and report["details"]["tensors"] == 6


def test_zoo_eval_real_dqn_run(dqn_real_run, tmp_path):
    out = tmp_path / "eval.json"
    result = _zoo(
        "eval", str(dqn_real_run), "--episodes", "4", "--num-envs", "2", "--deterministic", "--out", str(out)
    )
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["exp_name"] == "dqn" and data["task"] == "CartPole-v1" and data["framework"] == "cleanrl"
    assert Path(data["checkpoint"]) == dqn_real_run / "dqn.cleanrl_model"
    assert data["num_episodes"] == 4 and len(data["episodes"]) == 4 and data["num_envs"] == 2
    assert data["deterministic"] is True
    # CartPole pays +1 per step
    assert all(ep["length"] >= 1 and ep["return"] == ep["length"] for ep in data["episodes"])
    assert data["metrics"]["return_mean"] == pytest.approx(np.mean([ep["return"] for ep in data["episodes"]]))


# ----------------------------------------------------------------------------- c51.py's save format
@pytest.fixture(scope="module")
def c51_run(wheel_script, tmp_path_factory, monkeypatch_module):
    """What ``c51.py --save-model True`` writes, from the wheel's own QNetwork and parse_args().

    c51.py itself cannot run on gymnasium (see the module docstring); its save code is
    ``torch.save({"model_weights": q_network.state_dict(), "args": vars(args)}, model_path)``.
    """
    c51 = wheel_script("c51")
    monkeypatch_module.setattr(
        sys,
        "argv",
        ["c51.py", "--env-id", "CartPole-v1", "--n-atoms", "51", "--v-min", "-10", "--v-max", "10"],
    )
    args = c51.parse_args()
    monkeypatch_module.undo()
    assert args.exp_name == "c51" and args.n_atoms == 51
    run_name = f"{args.env_id}__{args.exp_name}__{args.seed}__{int(time.time())}"
    root = tmp_path_factory.mktemp("c51-format")
    run_dir = root / "runs" / run_name
    writer = c51.SummaryWriter(str(run_dir))
    table = "\n".join(f"|{key}|{value}|" for key, value in vars(args).items())
    writer.add_text("hyperparameters", f"|param|value|\n|-|-|\n{table}")
    writer.close()
    torch.manual_seed(args.seed)
    envs = vector_env_view(*SPACES["CartPole-v1"]())
    q_network = c51.QNetwork(envs, n_atoms=args.n_atoms, v_min=args.v_min, v_max=args.v_max)
    model_data = {"model_weights": q_network.state_dict(), "args": vars(args)}
    torch.save(model_data, run_dir / f"{args.exp_name}.cleanrl_model")
    return run_dir


def test_zoo_check_and_eval_accept_c51_save_format(c51_run, tmp_path):
    result = _zoo("check", str(c51_run.parent), "--json")
    assert result.exit_code == 0, result.output
    (report,) = json.loads(result.stdout)
    assert report["status"] == "ok", report
    assert report["run"]["exp_name"] == "c51"
    out = tmp_path / "eval.json"
    result = _zoo(
        "eval", str(c51_run), "--episodes", "4", "--num-envs", "2", "--deterministic", "--out", str(out)
    )
    assert result.exit_code == 0, result.output  # zoo must build C51QNetwork with the saved n_atoms=51
    data = json.loads(out.read_text())
    assert data["exp_name"] == "c51" and data["num_episodes"] == 4 and len(data["episodes"]) == 4
