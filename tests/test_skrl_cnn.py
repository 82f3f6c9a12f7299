"""skrl CNN policies from the model instantiator (``conv2d`` layers), on a tiny image env.

The config has the shape of Isaac Lab's skrl camera configs: one shared policy/value model
(``separate: false``), a ``features_extractor`` container that ``permute``\\ s the NHWC images
to NCHW and runs ``conv2d`` layers and ``flatten``, then a ``net`` container of linear layers.
The env is examples/pixel_target.py's ``PixelTarget-v0`` (a 12x12 RGB image of a dot to steer to the
centre) and the config examples/train_skrl.py's ``cnn`` kind, as the docs train it.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml
from helpers import assert_exports_act_like_checkpoint, zoo
from pixel_target import ENV_ID, SIZE
from skrl_helpers import loaded_agent, skrl_returns, train_isaac_lab_style, zoo_returns
from train_skrl import configure

from zoo.evaluator import single_cpu_thread

EPISODES, NUM_ENVS = 8, 4
CFG = configure("cnn", timesteps=256)[1]


@pytest.fixture(scope="session")
def skrl_cnn_run(tmp_path_factory):
    """``(run dir, checkpoint)``: a shared CNN policy/value trained by skrl's Runner, 256 steps x 4 envs."""
    logs = tmp_path_factory.mktemp("skrl-cnn") / "logs" / "skrl" / ENV_ID
    with single_cpu_thread("cpu"):
        return train_isaac_lab_style(CFG, logs, "2026-12-01_10-00-00_ppo_torch", ENV_ID)


def test_eval_matches_skrl_own_act_episode_for_episode(skrl_cnn_run, tmp_path):
    run, checkpoint = skrl_cnn_run
    ours = zoo_returns(run, tmp_path / "eval.json", episodes=EPISODES, num_envs=NUM_ENVS)
    theirs = skrl_returns(
        loaded_agent(CFG, checkpoint, tmp_path / "skrl", ENV_ID), ENV_ID, EPISODES, NUM_ENVS
    )
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-5)
    assert len(set(np.round(ours, 6))) > 1  # real, differing episodes


def test_check_reports_the_conv_layers(skrl_cnn_run):
    report = zoo("check", skrl_cnn_run[0], "--json").json()[0]
    assert report["status"] == "ok", report
    policy = report["details"]["policy"]
    assert policy["layers"] == ["conv2d", "conv2d", "flatten", "linear", "linear"]
    assert policy["sizes"] == [3, 8, 8, 32, 2] and policy["activations"] == ["relu", "relu", "elu"]
    assert report["details"]["preprocessor"]["size"] == SIZE * SIZE * 3


def test_exports_bake_scaler_permute_and_convs_and_act_like_the_checkpoint(skrl_cnn_run, tmp_path):
    sidecars = assert_exports_act_like_checkpoint(
        skrl_cnn_run[0], tmp_path, continuous=True, episodes=EPISODES
    )
    meta = sidecars["onnx"]
    assert meta["obs_shape"] == [SIZE, SIZE, 3] and meta["normalization_baked"] is True


def _lying_config(tmp_path, change) -> str:
    cfg = copy.deepcopy(CFG)
    change(cfg["models"]["policy"])
    path = tmp_path / "lying.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda p: p["network"][0]["layers"][0]["conv2d"].update(stride=1),
            "policy's conv2d layers give 800 features for [12, 12, 3] images, net_container.0 takes 200",
        ),
        (
            lambda p: p["network"][0]["layers"][0]["conv2d"].update(kernel_size=5),
            "declares hidden layers [conv2d(8, 5x5), conv2d(8, 3x3), 32], the weights have [conv2d(8, 3x3), "
            "conv2d(8, 3x3), 32]",
        ),
        (
            lambda p: p["network"][0].update(input="OBSERVATIONS"),
            "policy's first conv2d takes 3 channels, the env's images have 12 (shape [12, 12, 3])",
        ),
        (
            lambda p: p["network"][0]["layers"].pop(),
            "(linear) follows a conv2d layer without a flatten between",
        ),
        (
            lambda p: p["network"][1].update(input="OBSERVATIONS"),
            "zoo rebuilds networks whose containers chain",
        ),
        (
            lambda p: p["network"][0].update(input="OBSERVATIONS / 255"),
            "network input 'OBSERVATIONS / 255' is not supported",
        ),
    ],
)
def test_a_config_that_contradicts_the_conv_weights_is_one_error_line(
    skrl_cnn_run, change, message, tmp_path
):
    config = _lying_config(tmp_path, change)
    result = zoo("eval", skrl_cnn_run[0], "--quiet", "--model-config", config, "--out", tmp_path / "x.json")
    assert result.exit_code != 0 and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 2
