"""zoo's Genesis tasks against the examples they re-implement (tests/reference, Genesis v0.4.5).

The reference env and zoo's are built in one process with the same config and stepped with the same
actions; observations, rewards, dones and time-outs must agree at every step, through terminations,
time-outs and command resampling, so that any drift of zoo's definition from the example fails here.
On a CPU the two agree bit for bit; the tolerance (1e-5) only leaves room for a GPU's nondeterministic
reductions. Genesis compiles its kernels once per scene configuration (70-90 s cold on a CPU, a few
seconds warm from its cache), so every Go2 scene here has the example's configuration, as every hover
scene has the hover example's, and the envs are small.
"""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

from zoo.errors import BrokenFile, RefusedError, UnsupportedError
from zoo.tasks.cfgs import DRONE_HOVER, GO2_WALKING, describe_unknown, read_cfgs, recognize
from zoo.tasks.genesis import go2, hover

pytestmark = pytest.mark.genesis

ATOL = 1e-5
STEPS = 60
#: The first observation after a reset: dof_pos holds the initial angles in Genesis 0.4's dof order, minus the
#: defaults in the policy's order (measured on Genesis 0.4.5's go2_env.py; policies saw it from 0.3.11 on).
RESET_DOF_POS_TERM = [0.0, -0.8, 1.5, 0.0, 0.0, 2.3, 1.0, 0.0, 0.0, -1.5, -2.5, 0.0]
DOF_POS = slice(9, 21)


class NotAConfig:
    """A class a pickled config must not be allowed to build."""


def _genesis():
    """Skip without the genesis extra; else Genesis imported the way zoo imports it (with its output
    settings: the reference envs import it too, and the first import decides)."""
    missing = [m for m in ("genesis", "tensordict") if find_spec(m) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (the genesis extra)")
    from zoo.tasks.genesis import import_genesis

    import_genesis()


def go2_test_cfgs() -> list[dict]:
    """The example's config with short episodes (time-outs at step 26), commands resampled every 10 steps
    from ranges that make every draw count, so that a 60-step rollout goes through all of it."""
    cfgs = copy.deepcopy(go2.DEFAULT_CFGS)
    cfgs[0].update(episode_length_s=0.5, resampling_time_s=0.2)
    cfgs[3].update(lin_vel_x_range=[-1.0, 1.0], lin_vel_y_range=[-0.5, 0.5], ang_vel_range=[-1.0, 1.0])
    return cfgs


def hover_test_cfgs() -> list[dict]:
    """The example's config with 0.2 s episodes, a 20 degree tilt limit (big actions crash some envs),
    and a 0.5 m target threshold (targets are reached and resampled often, also in steps where another
    env resets: the example then recomputes every env's relative position)."""
    cfgs = copy.deepcopy(hover.DEFAULT_CFGS)
    cfgs[0].update(
        episode_length_s=0.2,
        at_target_threshold=0.5,
        termination_if_roll_greater_than=20,
        termination_if_pitch_greater_than=20,
    )
    cfgs[3].update(pos_x_range=[-0.5, 0.5], pos_y_range=[-0.5, 0.5], pos_z_range=[0.8, 1.2])
    return cfgs


def _actions(num_envs: int, num_actions: int, big: float):
    """The same seeded action sequence for both envs; every few steps large enough to tip the robot over."""
    import torch

    g = torch.Generator().manual_seed(0)
    return [
        torch.randn(num_envs, num_actions, generator=g) * (big if i % 30 > 20 else 0.3) for i in range(STEPS)
    ]


def _compare(ref, ours, actions, reset_obs=None) -> dict:
    """Step both with ``actions`` (ours first), asserting they agree; what the rollout went through.

    ``reset_obs(obs, done)``: the reference's observation as zoo's must be (where the running Genesis and
    the one zoo reproduces differ)."""
    import torch

    def expected(obs, done):
        return reset_obs(obs.clone(), done) if reset_obs else obs

    seen = {"terminations": 0, "time_outs": 0, "partial_resets": 0, "resampled": 0, "commands": []}
    first = expected(ref.get_observations()["policy"], torch.ones(ref.num_envs, dtype=torch.bool))
    torch.testing.assert_close(ours.get_observations()["policy"], first, atol=ATOL, rtol=0)
    for i, action in enumerate(actions):
        before = ours.commands.clone()
        obs, rew, done, extras = ours.step(action.clone())
        ref_obs, ref_rew, ref_done, ref_extras = ref.step(action.clone())
        where = f"step {i}"
        ref_obs = expected(ref_obs["policy"], done)
        torch.testing.assert_close(
            obs["policy"], ref_obs, atol=ATOL, rtol=0, msg=lambda m, where=where: f"{where}: obs {m}"
        )
        torch.testing.assert_close(
            rew, ref_rew, atol=ATOL, rtol=0, msg=lambda m, where=where: f"{where}: reward {m}"
        )
        assert done.dtype == torch.bool
        assert torch.equal(done, ref_done.to(torch.bool)), (
            f"{where}: dones {done.tolist()} != {ref_done.tolist()}"
        )
        assert torch.equal(extras["time_outs"], ref_extras["time_outs"]), where
        for key, value in ref_extras["episode"].items():  # float32 sums against the example's float64 means
            assert float(extras["episode"][key]) == pytest.approx(float(value), abs=1e-6), f"{where}: {key}"
        seen["terminations"] += int((done & (extras["time_outs"] == 0)).sum())
        seen["time_outs"] += int(extras["time_outs"].sum())
        seen["partial_resets"] += int(bool(done.any() and not done.all()))
        seen["resampled"] += int(((ours.commands != before).any(dim=1) & ~done).sum())
        seen["commands"].append(ours.commands.clone())
    assert seen["terminations"] and seen["time_outs"] and seen["partial_resets"] and seen["resampled"], seen
    return seen


def test_go2_matches_the_example():
    """Go2: the example's go2_env.py and zoo's agree step for step (commands from the same seed).

    One term may differ, by design: right after a reset the example writes the initial angles into dof_pos
    in the running Genesis' dof order, zoo in Genesis 0.4's (the quirk policies were trained with). On
    Genesis 1.x the example's term is then zero (its depth-first order makes the two orders agree)."""
    _genesis()
    import torch
    from reference.genesis_go2_env import Go2Env

    cfgs = go2_test_cfgs()
    ours = go2.Go2Walking(3, "cpu", seed=7, cfgs=cfgs)
    torch.manual_seed(7)  # the example draws commands from torch's global generator; zoo's from its own
    ref = Go2Env(3, *copy.deepcopy(cfgs[:4]))
    ref_reset_term = ref.init_dof_pos - ref.default_dof_pos  # in the running Genesis' dof order

    def reset_obs(obs, done):
        torch.testing.assert_close(obs[done, DOF_POS], ref_reset_term.expand(int(done.sum()), 12))
        obs[done, DOF_POS] = torch.tensor(RESET_DOF_POS_TERM)
        return obs

    _compare(ref, ours, _actions(3, 12, big=3.0), reset_obs=reset_obs)
    ours.close()
    ref.scene.destroy()


def test_hover_matches_the_example(monkeypatch):
    """Drone hover: the example's hover_env.py and zoo's agree step for step.

    The two draw targets differently (the example as many values as envs are resampled, from torch's
    global generator), so the reference takes zoo's target for each env it resamples itself: an env
    resampled by one and not the other still makes them disagree."""
    _genesis()
    import torch
    from reference import genesis_hover_env

    cfgs = hover_test_cfgs()
    ours = hover.DroneHover(4, "cpu", seed=7, cfgs=cfgs)

    def take_ours(self, envs_idx):
        self.commands[envs_idx] = ours.commands[envs_idx]

    monkeypatch.setattr(genesis_hover_env.HoverEnv, "_resample_commands", take_ours)
    ref = genesis_hover_env.HoverEnv(4, *copy.deepcopy(cfgs[:4]))
    seen = _compare(ref, ours, _actions(4, 4, big=3.0))
    low, high = (torch.tensor([cfgs[3][k][side] for k in hover.COMMAND_KEYS]) for side in (0, 1))
    assert all(((c >= low) & (c <= high)).all() for c in seen["commands"])
    ours.close()
    ref.scene.destroy()


@pytest.fixture(scope="session")
def go2_env():
    """zoo's Go2 with the example's config, 2 envs."""
    _genesis()
    env = go2.Go2Walking(2, "cpu", seed=0)
    yield env
    env.close()


def test_go2_reset_observation_keeps_the_quirk(go2_env):
    """After a reset, dof_pos is the init angles in Genesis 0.4's order; gravity (0,0,-1), commands (1, 0, 0)."""
    import torch

    obs = go2_env.reset()["policy"]
    assert obs.shape == (2, go2.OBS_DIM) and obs.dtype == torch.float32
    expected = [0.0] * 3 + [0.0, 0.0, -1.0] + [1.0, 0.0, 0.0] + RESET_DOF_POS_TERM + [0.0] * 24
    torch.testing.assert_close(obs, torch.tensor([expected] * 2), atol=1e-6, rtol=0)


@pytest.fixture(scope="session")
def hover_env():
    """zoo's drone hover with the example's config, 2 envs."""
    _genesis()
    env = hover.DroneHover(2, "cpu", seed=0)
    yield env
    env.close()


@pytest.mark.parametrize("env_name", ["go2_env", "hover_env"])
def test_steps_under_inference_mode_and_resets_after(env_name, request, capfd):
    """zoo's evaluator resets outside ``torch.inference_mode`` and steps inside it, twice in a process; quietly.
    The actions make the Go2 fall over and the drone fall down: envs are done and reset inside the steps."""
    import torch

    env = request.getfixturevalue(env_name)
    for _ in range(2):
        env.reset()
        dones = 0
        with torch.inference_mode():
            for _ in range(60):
                obs, rew, done, extras = env.step(torch.full((2, env.num_actions), -5.0))
                dones += int(done.sum())
        assert obs["policy"].shape[0] == rew.shape[0] == extras["time_outs"].shape[0] == 2 and dones
    assert capfd.readouterr() == ("", "")


def test_obs_terms_cover_the_observation(go2_env):
    for task, size in ((go2.Go2Walking, go2.OBS_DIM), (hover.DroneHover, hover.OBS_DIM)):
        terms = task.obs_terms(None)["policy"]
        assert sum(t.dim for t in terms) == size and terms[-1].start + terms[-1].dim == size
        assert task.spaces(None)[0]["policy"].shape == (size,)
    assert go2_env.get_observations()["policy"].shape[-1] == go2.OBS_DIM
    terms = {t.name: t for t in go2.Go2Walking.obs_terms(None)["policy"]}
    assert terms["commands"].scale == (2.0, 2.0, 0.25) and terms["dof_vel"].scale == 0.05
    clips = {t.name: t.clip for t in hover.DroneHover.obs_terms(None)["policy"]}
    assert clips == {
        "rel_pos": 1.0,
        "base_quat": None,
        "base_lin_vel": 1.0,
        "base_ang_vel": 1.0,
        "last_actions": None,
    }


def test_spaces_and_terms_do_not_import_genesis():
    code = (
        "import sys\n"
        "from zoo.tensor_env import TensorEnvSpec\n"
        "for task in ('Genesis-Go2Walking-v0', 'Genesis-DroneHover-v0'):\n"
        "    spec = TensorEnvSpec(task)\n"
        "    obs, act = spec.spaces()\n"
        "    spec.obs_terms()\n"
        "    print(obs['policy'].shape[0], act.shape[0], act.high[0])\n"
        "assert not {'genesis', 'torch', 'tensordict'} & set(sys.modules), 'imported'\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["45", "12", "100.0", "17", "4", "1.0"]


@pytest.mark.slow
def test_genesis_is_quiet():
    """Importing, initialising, building and stepping print nothing (Genesis' banner, its INFO lines, the
    per-step FPS line and Quadrants' notices are all off at zoo's default level)."""
    _genesis()
    code = (
        "import torch\n"
        "from zoo.tasks.genesis.hover import DroneHover\n"
        "env = DroneHover(1, 'cpu', 0)\n"
        "env.step(torch.zeros(1, 4))\n"
        "env.close()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert (done.stdout, done.stderr) == ("", "")


def test_ensure_init_refuses_another_device(go2_env):
    """Genesis is initialised once per process: a task on another device is refused, in one line."""
    from zoo.tasks.genesis import ensure_init

    with pytest.raises(UnsupportedError) as info:
        ensure_init("cuda")
    assert "Genesis is initialised for cpu" in str(info.value) and "\n" not in str(info.value)


def test_recognize_the_defaults_and_another_task():
    assert recognize(go2.DEFAULT_CFGS) == GO2_WALKING
    assert recognize(hover.DEFAULT_CFGS) == DRONE_HOVER
    old = copy.deepcopy(go2.DEFAULT_CFGS)  # Genesis 0.2.1 named the joints dof_names
    old[0]["dof_names"] = old[0].pop("joint_names")
    assert recognize(old) == GO2_WALKING
    cartpole = [
        {"num_actions": 1, "pole_length": 0.5, "episode_length_s": 10.0},
        {},
        {},
        {},
        {"algorithm": {}},
    ]
    assert recognize(cartpole) is None
    assert (
        describe_unknown(cartpole)
        == "num_actions 1, env_cfg keys: episode_length_s, num_actions, pole_length"
    )


def test_reward_scales_of_a_0_2_1_run_are_already_per_step():
    env_cfg, _obs, reward_cfg, *_ = go2.DEFAULT_CFGS
    assert go2.reward_scales(env_cfg, reward_cfg)["base_height"] == pytest.approx(-1.0)
    old = dict(env_cfg, dof_names=env_cfg["joint_names"])
    del old["joint_names"]
    assert go2.reward_scales(old, {"reward_scales": {"base_height": -1.0}}) == {"base_height": -1.0}


def test_read_cfgs_refuses_what_is_not_a_config(tmp_path):
    instance = tmp_path / "instance.pkl"
    instance.write_bytes(pickle.dumps([NotAConfig(), {}, {}, {}, {}]))
    with pytest.raises(RefusedError) as info:
        read_cfgs(instance)
    assert "NotAConfig" in str(info.value) and "\n" not in str(info.value)
    short = tmp_path / "short.pkl"
    short.write_bytes(pickle.dumps([{}, {}, {}]))
    with pytest.raises(BrokenFile, match="list of 5 config dicts") as info:
        read_cfgs(short)
    assert "\n" not in str(info.value)


GO2, HOVER = (go2.Go2Walking, go2.DEFAULT_CFGS), (hover.DroneHover, hover.DEFAULT_CFGS)


@pytest.mark.parametrize(
    ("task", "edit", "message"),
    [
        (GO2, lambda c: c[0].update(num_actions=11), "num_actions is 11"),
        (GO2, lambda c: c[0]["joint_names"].pop(), "joint_names must list"),
        (GO2, lambda c: c[2]["reward_scales"].update(feet_air_time=1.0), "feet_air_time"),
        (GO2, lambda c: c[0].pop("kp"), "env_cfg['kp']"),
        (HOVER, lambda c: c[0].update(num_actions=6), "num_actions is 6"),
        (HOVER, lambda c: c[3].update(pos_z_range=[1.0]), "pos_z_range"),
    ],
)
def test_a_config_the_definition_cannot_honour_is_refused(task, edit, message):
    cls, defaults = task
    cfgs = copy.deepcopy(defaults)
    edit(cfgs)
    with pytest.raises(UnsupportedError) as info:
        cls.spaces(cfgs)
    assert message in str(info.value) and "\n" not in str(info.value) and info.value.hint


@pytest.fixture(scope="session")
def genesis_hover_run(tmp_path_factory) -> Path:
    """A hover_train.py run (2 iterations, 8 envs) on zoo's drone hover: logs/drone-hovering."""
    _genesis()
    from genesis_helpers import train_hover_run

    return train_hover_run(tmp_path_factory.mktemp("genesis-hover"))


@pytest.mark.slow
def test_a_trained_run_is_laid_out_as_go2_train_writes_it(go2_run, genesis_hover_run):
    import torch

    for run, task, obs_dim in ((go2_run, GO2_WALKING, 45), (genesis_hover_run, DRONE_HOVER, 17)):
        assert {p.name for p in run.glob("model_*.pt")} == {"model_0.pt", "model_1.pt"}
        cfgs = read_cfgs(run / "cfgs.pkl")
        assert recognize(cfgs) == task and "algorithm" in cfgs[4]
        state = torch.load(run / "model_1.pt", map_location="cpu", weights_only=True)
        assert state["actor_state_dict"]["mlp.0.weight"].shape[1] == obs_dim
    assert read_cfgs(go2_run / "cfgs.pkl")[2]["reward_scales"]["base_height"] == -50.0  # pickled unscaled


@pytest.mark.slow
def test_video_of_env_0(tmp_path):
    """Env 0's episodes become rl-video-episode-{k}.mp4 (the one cut short at close()); a failing render
    is recorded, never raised."""
    _genesis()
    import av
    import torch

    cfgs = copy.deepcopy(go2.DEFAULT_CFGS)
    cfgs[0]["episode_length_s"] = 0.1  # 6 steps an episode
    env = go2.Go2Walking(2, "cpu", seed=0, cfgs=cfgs, video_dir=str(tmp_path))
    dones = [bool(env.step(torch.zeros(2, 12))[2][0]) for _ in range(15)]
    env.close()
    ends = [i + 1 for i, done in enumerate(dones) if done][:2]
    assert len(ends) == 2 and ends[1] < 15  # two whole episodes, and a third cut short
    assert env.video_failures == []
    assert env.videos_written == [tmp_path / f"rl-video-episode-{k}.mp4" for k in range(3)]
    frames = []
    for path in env.videos_written:
        with av.open(str(path)) as container:
            frames.append(sum(1 for _ in container.decode(video=0)))
    assert frames == [ends[0], ends[1] - ends[0], 15 - ends[1]] and min(frames) > 1

    broken = go2.Go2Walking(1, "cpu", seed=0, cfgs=cfgs, video_dir=str(tmp_path / "broken"))
    broken.video._camera.render = lambda **_: (_ for _ in ()).throw(RuntimeError("no EGL display\nmore"))
    with pytest.warns(UserWarning, match="video capture stopped: no EGL display"):
        broken.step(torch.zeros(1, 12))
    broken.step(torch.zeros(1, 12))
    broken.close()
    assert broken.video_failures == ["video capture stopped: no EGL display"] and broken.videos_written == []
