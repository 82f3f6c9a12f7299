"""rsl_rl CNN actors: a ``CNNModel`` trained by the real ``OnPolicyRunner`` on image observations.

gymnasium ships no continuous-control env with image observations that is installed here, so the docs' example
registers one (examples/pendulum_camera.py): Pendulum-v1 seen through a 12x12 camera (the rod drawn from its angle,
``(1, 12, 12)`` float32) beside two 1-D groups, ``velocity`` and ``height`` (the angular velocity and cos of the
angle), as a Dict observation. rsl_rl's VecEnv gives the same groups by name. The run config lists the actor's
groups as ``[velocity, height, camera]``, not in the Dict's (sorted) key order, so a zoo that read
the groups in the env's order would feed the normalizer swapped values and the parity would fail.
PPO trains the CNN actor (BatchNorm in its first layer, a CNN critic) for 4 iterations on 8 envs, as
examples/train_rsl_rl.py's ``camera`` run does.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
import yaml
from helpers import assert_exports_act_like_checkpoint, zoo
from pendulum_camera import ENV_ID, SIZE
from test_rsl_rl import onnx_session, rsl_rl_returns, zoo_eval, zoo_returns
from train_rsl_rl import CNN_CFG, configure, train

from zoo.exporter.obs import flatten_obs
from zoo.exporter.parity import sample_batch


class CnnRun:
    def __init__(self, run_dir: Path, runner, model: Path):
        self.run_dir, self.runner, self.model = run_dir, runner, model


@pytest.fixture(scope="module")
def rsl_cnn_run(tmp_path_factory) -> CnnRun:
    """examples/train_rsl_rl.py's camera run, 4 iterations in one go."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        run_dir = (
            tmp_path_factory.mktemp("rsl_cnn") / "logs" / "rsl_rl" / "pendulum_camera" / "2026-12-01_10-00-00"
        )
        runner, (model,) = train(run_dir, *configure("camera"), checkpoints=1, iterations=4)
        yield CnnRun(run_dir, runner, model)
    finally:
        torch.set_num_threads(threads)


def test_check_describes_the_cnn_actor_from_weights_and_config(rsl_cnn_run):
    report = zoo("check", rsl_cnn_run.run_dir, "--json").json()[0]
    assert report["status"] == "ok", report
    assert report["run"]["env_id"] == ENV_ID and report["details"]["policy"] == "actor"
    assert report["details"]["model"] == "CNN camera(1->4->8) + MLP 34-32-32-1 (elu, obs normalizer)"


def test_eval_matches_rsl_rl_inference_policy_episode_for_episode(rsl_cnn_run, tmp_path):
    ours = zoo_returns(rsl_cnn_run.run_dir, tmp_path / "eval.json")
    theirs = rsl_rl_returns(rsl_cnn_run.runner, ENV_ID)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=0)
    assert len(set(np.round(ours, 6))) > 1


def test_export_spec_slices_the_groups_out_of_the_flat_input_like_act(rsl_cnn_run, tmp_path):
    import onnxruntime  # noqa: F401 - onnx_session needs it

    import zoo as zoo_api

    policy = zoo_api.load_policy(rsl_cnn_run.model, exp_name="rsl_ppo", env_id=ENV_ID)
    spec = policy.export_spec()
    assert spec.obs_shape == (SIZE * SIZE + 2,) and list(spec.obs_groups) == ["camera", "height", "velocity"]
    assert spec.baked == ["EmpiricalNormalization", "a CNN per image group (camera)", "Gaussian mean"]
    assert spec.normalization["kind"] == "rsl_rl_empirical"
    obs = sample_batch(policy.observation_space, 256, np.random.default_rng(0))
    expected = policy.act(obs)[0]
    flat = torch.from_numpy(flatten_obs(obs, spec.obs_groups))
    with torch.no_grad():
        traced = torch.jit.trace(spec.module, flat[:2])
        outs = {"eager": spec.module(flat).numpy(), "trace": traced(flat).numpy()}
    session = onnx_session(spec.module, (flat[:2],), tmp_path / "cnn.onnx", ["obs"], ["actions"])
    outs["onnx"] = session.run(None, {"obs": flat.numpy()})[0]
    diffs = {name: float(np.abs(out - expected).max()) for name, out in outs.items()}
    assert diffs["eager"] == 0.0 and max(diffs.values()) <= 1e-5, diffs
    assert len(set(np.round(expected[:, 0], 4))) > 100
    swapped = flatten_obs({**obs, "camera": obs["camera"][::-1]}, spec.obs_groups)  # the images matter
    with torch.no_grad():
        assert np.abs(spec.module(torch.from_numpy(swapped)).numpy() - expected).max() > 1e-3


def test_exports_score_like_the_checkpoint(rsl_cnn_run, tmp_path):
    sidecars = assert_exports_act_like_checkpoint(
        rsl_cnn_run.run_dir, tmp_path, continuous=True, episodes=4, num_envs=2
    )
    for sidecar in sidecars.values():
        assert sidecar["parity"]["max_abs_diff"] <= 1e-5 and sidecar["obs_shape"] == [SIZE * SIZE + 2]


def test_what_zoo_cannot_rebuild_is_one_error_line(rsl_cnn_run, tmp_path):
    run_dir = tmp_path / "logs" / "rsl_rl" / "camera" / rsl_cnn_run.run_dir.name
    shutil.copytree(rsl_cnn_run.run_dir, run_dir)
    cfg = yaml.safe_load((run_dir / "params" / "agent.yaml").read_text())
    cases = {
        "no cnn_cfg": (
            {**cfg, "actor": {k: v for k, v in cfg["actor"].items() if k != "cnn_cfg"}},
            "a CNNModel actor (images ['camera']) needs the cnn_cfg of the run's config",
        ),
        "other stride": (
            {**cfg, "actor": {**cfg["actor"], "cnn_cfg": {**CNN_CFG, "stride": 1}}},
            f"the weights do not fit the actor rebuilt for {ENV_ID}'s images: "
            "mlp.0.weight is (32, 34), the actor needs (32, 514)",
        ),
        "a group the env lacks": (
            {**cfg, "obs_groups": {"actor": ["velocity", "depth", "camera"]}},
            "the actor reads the observation groups ['depth']",
        ),
    }
    for name, (agent, reason) in cases.items():
        (run_dir / "params" / "agent.yaml").write_text(yaml.dump(agent))
        report = zoo("check", run_dir, "--json").json()[0]
        assert report["status"] == "error" and reason in report["reason"], (name, report["reason"])
        result = zoo_eval(run_dir, tmp_path / "eval.json")
        assert result.exit_code == 1 and result.stderr.count("error:") == 1, name
        assert reason in " ".join(result.stderr.split()) and "Traceback" not in result.stderr, name
    wrong = zoo_eval(rsl_cnn_run.run_dir, tmp_path / "eval.json", "--env-id", "Pendulum-v1")
    assert wrong.exit_code == 1 and "Pendulum-v1 must give a Dict observation with these keys" in wrong.stderr


def test_a_box_image_observation_is_the_cnns_one_group():
    """An env whose whole observation is an image (no Dict) feeds the one CNN group, in act and in export."""
    from zoo.frameworks.rsl_rl.checkpoint import Architecture, build_model
    from zoo.frameworks.rsl_rl.obs import env_layout
    from zoo.frameworks.rsl_rl.policy import RslRlPolicy

    torch.manual_seed(0)
    space = gym.spaces.Box(0, 255, (2, 9, 9), np.uint8)  # raw pixel values, as Atari-like envs give them
    arch = Architecture(
        obs_dim=4,
        action_dim=2,
        hidden_dims=(8,),
        activation="elu",
        obs_normalization=False,
        distribution=None,
        cnns=(("policy", (2, 4)),),
        cnn_cfg={"output_channels": [4], "kernel_size": 3, "stride": 2, "global_pool": "avg"},
    )
    layout = env_layout(space, arch, None, "actor", "Pixels-v0")
    assert layout.images == (("policy", (2, 9, 9)),) and not layout.vectors and not layout.from_dict
    assert "takes 2-channel images" in env_layout(gym.spaces.Box(0, 1, (3, 9, 9)), arch, None, "actor", "x")
    policy = RslRlPolicy(
        build_model(arch, layout),
        space,
        gym.spaces.Box(-1, 1, (2,)),
        clip_actions=None,
        device="cpu",
        seed=0,
        layout=layout,
    )
    obs = sample_batch(space, 32, np.random.default_rng(1))
    spec = policy.export_spec()
    assert spec.obs_shape == (2, 9, 9) and spec.normalization is None
    with torch.no_grad():
        out = spec.module(torch.from_numpy(flatten_obs(obs, spec.obs_groups))).numpy()
    expected = policy.act(obs)[0]
    assert np.abs(out - expected).max() == 0.0 and np.ptp(expected[:, 0]) > 1e-3
