"""rsl_rl: runs written by rsl-rl-lib's ``OnPolicyRunner`` are found, checked and evaluated as rsl_rl does.

The fixture trains PPO for a few iterations on Pendulum-v1 (8 envs) through a small rsl_rl ``VecEnv``
over a gymnasium ``SyncVectorEnv``, once with an ``MLPModel`` actor and once with an LSTM ``RNNModel``
actor, and saves with ``runner.save`` into an Isaac Lab style run dir (``params/agent.yaml`` and
``params/env.yaml`` dumped from the configs, as Isaac Lab's train script does). zoo's eval is then
compared, episode for episode, with rsl_rl's own ``runner.get_inference_policy()`` stepped by the same
evaluator on the same seeded envs.
"""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from helpers import (
    Canary,
    assert_exports_act_like_checkpoint,
    make_run,
    write_malicious,
    zoo,
)
from rsl_rl_layouts import genesis_cfgs, legacy_checkpoint
from train_rsl_rl import configure, train

from zoo.envs import EnvSpec, make_vector_env
from zoo.evaluator import rollout
from zoo.exporter.modules import GruOnly

ENV_ID = "Pendulum-v1"
EPISODES, NUM_ENVS = 6, 4  # quotas [2, 2, 1, 1]: envs 0 and 1 play a second episode after a reset


class Trained:
    """One trained run: its dir, the runner that wrote it and the config."""

    def __init__(self, run_dir: Path, runner, cfg: dict, checkpoints: list[Path]):
        self.run_dir, self.runner, self.cfg = run_dir, runner, cfg
        self.earlier, self.model = checkpoints


def _train(root: Path, rnn_type: str | None) -> Trained:
    """A run of examples/train_rsl_rl.py's, keeping the runner (rsl_rl's own inference policy is the reference)."""
    run_dir = root / "logs" / "rsl_rl" / f"pendulum_{rnn_type or 'mlp'}" / "2026-11-30_10-00-00"
    cfg, env = configure(rnn_type or "mlp")
    runner, checkpoints = train(run_dir, cfg, env)
    return Trained(run_dir, runner, cfg, checkpoints)


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> dict[str, Trained]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        root = tmp_path_factory.mktemp("rsl")
        yield {kind: _train(root, None if kind == "mlp" else kind) for kind in ("mlp", "lstm", "gru")}
    finally:
        torch.set_num_threads(threads)


class InferenceShim:
    """rsl_rl's own inference policy behind zoo's Policy protocol.

    As rsl_rl's runner does after each step, finished envs get ``policy.reset(dones)``. The evaluator
    marks an env both at its done step and at the next one (gymnasium's vector env discards that
    step's action and resets then), so each episode starts from a zero hidden state, as in rsl_rl's
    same-step-reset envs.
    """

    def __init__(self, runner, spaces):
        self.policy = runner.get_inference_policy(device="cpu")
        self.policy.reset()
        self.observation_space, self.action_space = spaces
        self.is_recurrent = self.policy.is_recurrent

    def act(self, obs_batch, state=None, deterministic=True):
        from tensordict import TensorDict

        groups = (
            obs_batch if isinstance(obs_batch, dict) else {"policy": obs_batch}
        )  # as the VecEnvs give them
        with torch.inference_mode():
            obs = TensorDict(
                {k: torch.as_tensor(v, dtype=torch.float32) for k, v in groups.items()},
                batch_size=[len(next(iter(groups.values())))],
            )
            actions = self.policy(obs).numpy()
        return actions, state

    def reset(self, done_mask):
        with torch.inference_mode():
            self.policy.reset(torch.as_tensor(done_mask))


def rsl_rl_returns(runner, env_id: str = ENV_ID) -> list[float]:
    """The returns of rsl_rl's own inference policy, stepped by zoo's evaluator as ``zoo_eval`` steps zoo's."""
    envs = make_vector_env(EnvSpec(env_id), NUM_ENVS)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        shim = InferenceShim(runner, (envs.single_observation_space, envs.single_action_space))
        episodes = rollout(shim, envs, EPISODES, seed=0, deterministic=True)
    finally:
        torch.set_num_threads(threads)
        envs.close()
    return [e.return_ for e in episodes]


def zoo_eval(target: Path, out: Path, *args: str):
    return zoo(
        "eval",
        target,
        "--deterministic",
        "--episodes",
        EPISODES,
        "--num-envs",
        NUM_ENVS,
        "--seed",
        0,
        "--out",
        out,
        "--quiet",
        *args,
    )


def zoo_returns(target: Path, out: Path, *args: str) -> list[float]:
    result = zoo_eval(target, out, *args)
    assert result.exit_code == 0, result.stderr
    data = json.loads(out.read_text())
    assert data["framework"] == "rsl_rl" and data["exp_name"] == "rsl_ppo" and data["deterministic"] is True
    return [e["return"] for e in data["episodes"]]


def test_check_reports_the_latest_checkpoint_of_each_trained_run(trained):
    reports = {r["run"]["path"]: r for r in zoo("check", trained["mlp"].run_dir.parents[1], "--json").json()}
    assert len(reports) == 3
    for kind, run in trained.items():
        report = reports[str(run.run_dir)]
        assert report["status"] == "ok", report
        assert report["run"]["framework"] == "rsl_rl" and report["run"]["exp_name"] == "rsl_ppo"
        assert report["run"]["model_file"] == str(run.model)
        assert report["run"]["other_model_files"] == [str(run.earlier)]
        assert report["run"]["env_id"] == ENV_ID and report["run"]["seed"] == 7
        details = report["details"]
        assert (
            details["iteration"] == int(run.model.stem.split("_")[1]) > 1
            and details["other_checkpoints"] == 1
        )
        assert details["config"] == "params/agent.yaml" and details["checkpoint"] == "actor_state_dict"
        assert details["weights_only"] is True and details["recurrent"] is (kind != "mlp")
    models = {kind: reports[str(run.run_dir)]["details"]["model"] for kind, run in trained.items()}
    assert models == {
        "mlp": "MLP 3-32-32-1 (elu, obs normalizer)",
        "lstm": "LSTM(3->16)x1 + MLP 16-32-32-1 (elu, obs normalizer)",
        "gru": "GRU(3->16)x2 + MLP 16-32-32-1 (elu, obs normalizer)",
    }


def test_check_shows_the_training_return_rsl_rl_logs(trained, tmp_path):
    """rsl_rl's runner logs ``Train/mean_reward``, not CleanRL's ``charts/episodic_return``."""
    from torch.utils.tensorboard import SummaryWriter

    run_dir = tmp_path / "logs" / "rsl_rl" / "pendulum" / trained["mlp"].run_dir.name
    shutil.copytree(trained["mlp"].run_dir, run_dir)
    writer = SummaryWriter(str(run_dir))  # what OnPolicyRunner's tensorboard writer logs per iteration
    writer.add_scalar("Train/mean_reward", -812.5, 3)
    writer.add_scalar("charts/episodic_return", 1.0, 3)  # another framework's tag must not be read
    writer.close()
    report = zoo("check", run_dir, "--json").json()[0]
    assert report["details"]["train_return"] == {"step": 3, "value": -812.5}


def test_push_names_the_repo_by_the_seed_the_runner_config_holds(trained, tmp_path):
    """Isaac Lab run dirs are named by date: the seed comes from params/agent.yaml, as zoo check says."""
    result = zoo(
        "push",
        trained["mlp"].run_dir,
        "--hf-entity",
        "lab",
        "--episodes",
        "1",
        "--json",
        "--stage-dir",
        tmp_path / "stage",
    )
    assert result.exit_code == 0, result.stderr
    assert result.json()["repo_id"] == f"lab/{ENV_ID}-rsl_ppo-seed7"
    assert "--run-seed 7" in (tmp_path / "stage" / "README.md").read_text()


def test_a_python_tag_in_params_is_an_error_and_push_strips_it(trained, tmp_path):
    """Isaac Lab's dumps hold tuples (no finding); a key tagged to call os.system is code for whoever loads
    the published params/agent.yaml with yaml.UnsafeLoader."""
    run = tmp_path / "logs" / "rsl_rl" / "pendulum" / "2026-11-30_10-00-00"
    shutil.copytree(trained["mlp"].run_dir, run)
    canary = tmp_path / "canary"
    with (run / "params" / "agent.yaml").open("a") as fh:
        fh.write(
            f"obs_groups_order: !!python/tuple [policy]\nhook: !!python/object/apply:os.system [touch {canary}]\n"
        )
    report = zoo("check", run, "--json").json()[0]
    assert report["status"] == "error" and report["reason"].startswith(
        "params/agent.yaml: hook is tagged !!python/object/apply:os.system"
    ), report
    assert "--strip-unsafe" in report["hint"] and report["details"]["iteration"] == int(
        trained["mlp"].model.stem.split("_")[1]
    )  # described all the same
    stage = tmp_path / "stage"
    refused = zoo("push", run, "--hf-entity", "lab", "--episodes", "1", "--stage-dir", stage)
    assert refused.exit_code == 3 and "refusing to push: params/agent.yaml: hook is tagged" in refused.stderr
    pushed = zoo("push", run, "--hf-entity", "lab", "--episodes", "1", "--stage-dir", stage, "--strip-unsafe")
    assert pushed.exit_code == 0, pushed.stderr
    staged = yaml.load((stage / "params" / "agent.yaml").read_text(), Loader=yaml.UnsafeLoader)
    assert "hook" not in staged and staged["obs_groups_order"] == ("policy",)
    before = yaml.load(
        (trained["mlp"].run_dir / "params" / "agent.yaml").read_text(), Loader=yaml.UnsafeLoader
    )
    assert {k: v for k, v in staged.items() if k != "obs_groups_order"} == before
    assert not canary.exists()


@pytest.mark.parametrize("kind", ["mlp", "lstm", "gru"])
def test_eval_matches_rsl_rl_inference_policy_episode_for_episode(trained, kind, tmp_path):
    run = trained[kind]
    ours = zoo_returns(run.run_dir, tmp_path / "eval.json", "--env-id", ENV_ID)
    theirs = rsl_rl_returns(run.runner)
    assert len(ours) == EPISODES
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-9)
    assert len(set(np.round(ours, 6))) > 1  # real, differing episodes


def _policy(run: Trained, clip_actions: float | None = None):
    import zoo

    policy = zoo.load_policy(run.model, exp_name="rsl_ppo", env_id=ENV_ID)
    if clip_actions is not None:
        policy.clip_actions = clip_actions
    return policy


def sample_obs(policy, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Observations drawn from (a copy of) the policy's observation space, seeded."""
    import copy

    space = copy.deepcopy(policy.observation_space)
    space.seed(seed)
    n = int(np.prod(shape))
    return np.stack([space.sample() for _ in range(n)]).astype(np.float32).reshape(*shape, -1)


def onnx_session(module, args: tuple, path: Path, input_names, output_names):
    """Legacy ONNX export at opset 17, batch axis dynamic (the exporter's own dynamo path is tested via the CLI)."""
    import onnxruntime as ort

    axes = {"obs": {0: "batch"}, "actions": {0: "batch"}}
    axes.update({name: {1: "batch"} for name in (*input_names, *output_names) if name[0] in "hc"})
    torch.onnx.export(
        module,
        args,
        str(path),
        input_names=input_names,
        output_names=output_names,
        dynamic_axes=axes,
        dynamo=False,
        opset_version=17,
    )
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def test_export_spec_of_an_mlp_actor_is_act_deterministic(trained, tmp_path):
    policy = _policy(trained["mlp"])
    spec = policy.export_spec()
    assert spec.obs_shape == (3,) and spec.obs_groups == {"policy": {"start": 0, "dim": 3, "shape": [3]}}
    assert spec.recurrent is None and not spec.module.training
    assert spec.normalization == {
        "kind": "rsl_rl_empirical",
        "formula": "(x - mean) / (std + eps)",
        "eps": 0.01,
    }
    assert spec.baked == ["EmpiricalNormalization", "Gaussian mean"]
    assert any("unclipped" in line for line in spec.left_to_caller)
    obs = sample_obs(policy, (256,), seed=1)
    expected = policy.act(obs, deterministic=True)[0]
    with torch.no_grad():
        eager = spec.module(torch.from_numpy(obs)).numpy()
        traced = torch.jit.trace(spec.module, torch.from_numpy(obs[:2]))
        traced_out = [traced(torch.from_numpy(o)).numpy() for o in (obs, obs[:1])]
    assert eager.shape == expected.shape == (256, 1) and len(set(np.round(expected[:, 0], 4))) > 100
    diffs = {"eager": float(np.abs(eager - expected).max())}
    assert diffs["eager"] <= 1e-6
    session = onnx_session(
        spec.module, (torch.from_numpy(obs[:2]),), tmp_path / "mlp.onnx", ["obs"], ["actions"]
    )
    onnx_out = [session.run(None, {"obs": o})[0] for o in (obs, obs[:1])]
    for name, (big, one) in {"trace": traced_out, "onnx": onnx_out}.items():
        diffs[name] = float(max(np.abs(big - expected).max(), np.abs(one - expected[:1]).max()))
        assert big.shape == (256, 1) and diffs[name] <= 1e-5, name

    clipped = _policy(trained["mlp"], clip_actions=0.05)  # binds: the trained actions reach beyond it
    clip_spec = clipped.export_spec()
    assert clip_spec.baked[-1] == "clip actions to +-0.05"
    with torch.no_grad():
        out = clip_spec.module(torch.from_numpy(obs)).numpy()
    assert np.abs(out - clipped.act(obs)[0]).max() <= 1e-6 and np.abs(out).max() == pytest.approx(0.05)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_export_spec_of_a_recurrent_actor_carries_the_state_like_act(trained, kind, tmp_path):
    steps, envs, reset_at = 64, 16, 32
    policy = _policy(trained[kind])
    spec = policy.export_spec()
    layers = 1 if kind == "lstm" else 2
    assert spec.recurrent is not None and (
        spec.recurrent.rnn_type,
        spec.recurrent.num_layers,
        spec.recurrent.hidden_dim,
    ) == (kind, layers, 16)
    assert "zero the state of an env at the start of its episode" in spec.left_to_caller
    obs = sample_obs(policy, (steps, envs), seed=2)
    mask = np.arange(envs) < envs // 2
    expected = []
    for t in range(steps):
        if t == reset_at:
            policy.reset(mask)
        expected.append(policy.act(obs[t], deterministic=True)[0])
    expected = np.stack(expected)

    def unroll(step, reset: bool = True) -> np.ndarray:
        h = np.zeros((layers, envs, 16), np.float32)
        c = np.zeros_like(h)
        out = []
        for t in range(steps):
            if t == reset_at and reset:
                h[:, mask], c[:, mask] = 0.0, 0.0
            actions, h, c = step(obs[t], h, c)
            out.append(actions)
        return np.stack(out)

    def torch_step(module):
        def step(o, h, c):
            with torch.no_grad():
                return [x.numpy().copy() for x in module(*map(torch.from_numpy, (o, h, c)))]

        return step

    # h and c must be distinct tensors: given one tensor twice, dynamo=True export treats them as one input
    example = (torch.from_numpy(obs[0, :2]), torch.zeros(layers, 2, 16), torch.zeros(layers, 2, 16))
    with torch.no_grad():
        traced = torch.jit.trace(spec.module, example)
    lstm = kind == "lstm"
    names = (
        (["obs", "h_in", "c_in"], ["actions", "h_out", "c_out"])
        if lstm
        else (["obs", "h_in"], ["actions", "h_out"])
    )
    onnx_module = spec.module if lstm else GruOnly(spec.module).eval()
    session = onnx_session(onnx_module, example[: len(names[0])], tmp_path / f"{kind}.onnx", *names)

    def onnx_step(sess):
        def step(o, h, c):
            outs = sess.run(None, dict(zip(names[0], (o, h, c), strict=False)))
            return outs if lstm else (*outs, c)

        return step

    diffs = {}
    for name, step, tol in (
        ("eager", torch_step(spec.module), 1e-6),
        ("trace", torch_step(traced), 1e-5),
        ("onnx", onnx_step(session), 1e-5),
    ):
        out = unroll(step)
        diffs[name] = float(np.abs(out - expected).max())
        assert out.shape == expected.shape == (steps, envs, 1) and diffs[name] <= tol, name
        # batch 1, from a state that is not zero
        state = [np.full((layers, 1, 16), 0.3, np.float32)] * 2
        one, reference = step(obs[0, :1], *state), torch_step(spec.module)(obs[0, :1], *state)
        assert all(np.abs(a - b).max() <= tol for a, b in zip(one, reference, strict=True)), name
    no_reset = unroll(torch_step(spec.module), reset=False)  # the reset mattered: the state differs after it
    assert np.abs(expected[reset_at:, mask] - no_reset[reset_at:, mask]).max() > 1e-4


@pytest.mark.parametrize("kind", ["mlp", "lstm"])
def test_export_spec_bakes_the_normalizer_and_leaves_the_policy_untouched(trained, kind):
    policy = _policy(trained[kind])
    obs = sample_obs(policy, (64,), seed=3)
    before = policy.act(obs)[0]
    policy.reset(np.ones(64, dtype=bool))
    spec = policy.export_spec()
    live = policy.model.obs_normalizer
    assert spec.baked[0] == "EmpiricalNormalization" and spec.normalization["eps"] == live.eps == 1e-2
    assert spec.module.obs_normalizer is not live
    assert not torch.equal(live._mean, torch.zeros_like(live._mean))  # trained statistics, not the identity
    state = (torch.zeros(1, 64, 16), torch.zeros(1, 64, 16)) if kind == "lstm" else ()
    x = torch.from_numpy(obs)
    with torch.no_grad():
        normalized = spec.module(x, *state)
        spec.module.obs_normalizer = torch.nn.Identity()
        raw = spec.module(x, *state)
        for param in spec.module.parameters():
            param.add_(1.0)
    normalized, raw = (out[0] if state else out for out in (normalized, raw))
    assert np.abs(normalized.numpy() - before).max() <= 1e-6
    assert (normalized - raw).abs().max() > 1e-3  # without the normalizer the actions change
    assert policy.model.obs_normalizer is live and np.array_equal(policy.act(obs)[0], before)


def test_export_spec_of_untrained_actor_variants_matches_act():
    """No normalizer, the other distributions, no distribution, and a 2-D observation flattened as act does."""
    import gymnasium as gym

    from zoo.frameworks.rsl_rl.checkpoint import Architecture, build_model
    from zoo.frameworks.rsl_rl.policy import RslRlPolicy

    torch.manual_seed(0)
    space = gym.spaces.Box(-3.0, 3.0, (2, 3), np.float32)
    obs = np.random.default_rng(4).uniform(-3.0, 3.0, (7, 2, 3)).astype(np.float32)
    for dist in (None, "HeteroscedasticGaussianDistribution", "BetaDistribution"):
        for norm, rnn in ((False, None), (True, "gru")):
            arch = Architecture(
                obs_dim=6,
                action_dim=2,
                hidden_dims=(8,),
                activation="elu",
                obs_normalization=norm,
                distribution=dist and {"class_name": dist},
                rnn_type=rnn,
                rnn_hidden_dim=5 if rnn else 0,
                rnn_num_layers=1 if rnn else 0,
            )
            policy = RslRlPolicy(
                build_model(arch), space, gym.spaces.Box(-1, 1, (2,)), clip_actions=None, device="cpu", seed=0
            )
            if norm:
                policy.model.obs_normalizer._mean.normal_()
            spec = policy.export_spec()
            assert spec.obs_shape == (2, 3) and spec.obs_groups["policy"]["dim"] == 6
            assert (spec.normalization is not None) is norm and (spec.recurrent is not None) is bool(rnn)
            args = (torch.from_numpy(obs), *((torch.zeros(1, 7, 5),) * 2 if rnn else ()))
            with torch.no_grad():
                traced = torch.jit.trace(
                    spec.module, tuple(a[:2] if i == 0 else a[:, :2] for i, a in enumerate(args))
                )
                expected = policy.act(obs)[0]  # once: a recurrent policy carries its state on
                for module in (spec.module, traced):
                    out = module(*args)
                    out = out[0] if rnn else out
                    assert np.abs(out.numpy() - expected).max() <= 1e-6, (dist, norm, rnn)


@pytest.mark.parametrize("kind", ["mlp", "lstm"])
def test_legacy_model_state_dict_checkpoint_gives_the_same_returns(trained, kind, tmp_path):
    run = trained[kind]
    legacy_dir = tmp_path / "logs" / "rsl_rl" / "legacy" / "2024-01-01_00-00-00"
    legacy_checkpoint(run.model, legacy_dir / "model_3.pt", normalizer_outside=kind == "mlp")
    policy = {
        "class_name": "ActorCriticRecurrent" if kind == "lstm" else "ActorCritic",
        "activation": "elu",
        "actor_hidden_dims": [32, 32],
        "rnn_type": "lstm" if kind == "lstm" else None,
    }
    (legacy_dir / "params").mkdir()
    (legacy_dir / "params" / "agent.yaml").write_text(
        yaml.dump({"policy": policy, "algorithm": {"class_name": "PPO"}})
    )
    report = zoo("check", legacy_dir, "--json").json()[0]
    assert report["details"]["checkpoint"] == "model_state_dict (rsl-rl-lib < 4 ActorCritic)"
    assert report["status"] == "warning" and "env id unknown" in report["reason"]  # no env.yaml
    new = zoo_returns(run.run_dir, tmp_path / "new.json", "--env-id", ENV_ID)
    old = zoo_returns(legacy_dir, tmp_path / "old.json", "--env-id", ENV_ID)
    assert old == new


def test_genesis_layout_with_cfgs_pkl(trained, tmp_path):
    run = trained["lstm"]
    log_dir = tmp_path / "logs" / "pendulum-walking"
    log_dir.mkdir(parents=True)
    (log_dir / "model_3.pt").write_bytes(run.model.read_bytes())
    with (log_dir / "cfgs.pkl").open("wb") as fh:  # as Genesis' examples write it
        pickle.dump(genesis_cfgs(run.cfg, "pendulum-walking", num_actions=1, num_obs=3), fh)
    report = zoo("check", tmp_path / "logs", "--json").json()[0]
    assert report["run"]["path"] == str(log_dir) and report["details"]["config"] == "cfgs.pkl"
    assert report["details"]["clip_actions"] == 100.0 and report["run"]["seed"] == 7
    assert report["run"]["env_id"] is None and "pass --env-id" in report["hint"]
    assert "cfgs.pkl describes a task zoo does not define (num_actions 1" in report["reason"]
    no_env = zoo_eval(log_dir, tmp_path / "e.json")
    assert no_env.exit_code == 1 and "cfgs.pkl describes a task zoo does not define" in no_env.stderr
    clipped = zoo_returns(
        log_dir, tmp_path / "genesis.json", "--env-id", ENV_ID
    )  # |actions| << 100: no effect
    assert clipped == zoo_returns(run.run_dir, tmp_path / "isaac.json", "--env-id", ENV_ID)


def test_malicious_cfgs_pkl_is_refused_and_never_runs(trained, tmp_path):
    canary = tmp_path / "canary"
    log_dir = tmp_path / "logs" / "evil"
    log_dir.mkdir(parents=True)
    (log_dir / "model_3.pt").write_bytes(trained["mlp"].model.read_bytes())
    (log_dir / "cfgs.pkl").write_bytes(pickle.dumps([{"algorithm": {}}, Canary(canary)], protocol=4))
    report = zoo("check", log_dir, "--json").json()[0]
    assert (
        report["status"] == "error" and "unsafe pickle" in report["reason"] and "system" in report["reason"]
    )
    result = zoo_eval(log_dir, tmp_path / "eval.json", "--env-id", ENV_ID)
    assert result.exit_code == 3 and "unsafe pickle" in result.stderr and "Traceback" not in result.stderr
    assert not canary.exists()


def test_malicious_checkpoint_is_refused_and_never_runs(tmp_path):
    canary = tmp_path / "canary"
    run_dir = tmp_path / "logs" / "rsl_rl" / "evil" / "2026-01-01_00-00-00"
    write_malicious(run_dir / "model_5.pt", canary)
    report = zoo("check", run_dir, "--json").json()[0]
    assert report["status"] == "error" and report["details"]["dangerous_globals"] == ["posix.system"]
    result = zoo_eval(run_dir / "model_5.pt", tmp_path / "eval.json", "--env-id", ENV_ID)
    assert result.exit_code == 3 and "unsafe pickle" in result.stderr
    assert not canary.exists()


def test_cleanrl_and_rsl_rl_runs_side_by_side_are_each_claimed_once(trained, tmp_path):
    make_run(tmp_path, "CartPole-v1", "dqn")
    rsl = tmp_path / "logs" / "run"
    rsl.mkdir(parents=True)
    (rsl / "model_3.pt").write_bytes(trained["mlp"].model.read_bytes())
    reports = zoo("check", tmp_path, "--json").json()
    assert sorted((r["run"]["framework"], Path(r["run"]["model_file"]).name) for r in reports) == [
        ("cleanrl", "dqn.cleanrl_model"),
        ("rsl_rl", "model_3.pt"),
    ]
    rsl_report = next(r for r in reports if r["run"]["framework"] == "rsl_rl")
    assert "no params/agent.yaml or cfgs.pkl" in " ".join([rsl_report["reason"], *rsl_report["notes"]])


def test_registry_entries_are_checked_by_the_adapter(tmp_path):
    bad = tmp_path / "reg.yaml"
    bad.write_text(
        "my_rsl:\n  framework: rsl_rl\n  format: torch-checkpoint\n  filename: 'policy.pt'\n"
        "  env: {wrappers: classic}\n  eval: {episodes: 10}\n"
    )
    result = zoo("--registry", bad, "registry", "list")
    assert result.exit_code == 1 and "'filename'" in result.stderr and "model_{iter}.pt" in result.stderr


def test_config_that_contradicts_the_weights_is_one_error_line(trained, tmp_path):
    run_dir = tmp_path / "logs" / "rsl_rl" / "bad" / "2026-01-01_00-00-00"
    (run_dir / "params").mkdir(parents=True)
    (run_dir / "model_2.pt").write_bytes(trained["lstm"].model.read_bytes())
    contradictions = (
        ({"rnn_type": "gru"}, "the config says rnn_type 'gru', the weights are a LSTM"),
        ({"activation": "softsign"}, "activation 'softsign' is not one of rsl_rl's"),
        ({"state_dependent_std": True}, "the config sets state_dependent_std (rsl-rl-lib 3.x)"),
    )
    for actor, reason in contradictions:
        (run_dir / "params" / "agent.yaml").write_text(yaml.dump({"actor": actor}))
        report = zoo("check", run_dir, "--json").json()[0]
        assert report["status"] == "error" and reason in report["reason"]
        result = zoo_eval(run_dir, tmp_path / "eval.json", "--env-id", ENV_ID)
        assert result.exit_code == 1 and reason in result.stderr and "Traceback" not in result.stderr
    (run_dir / "params" / "agent.yaml").write_text(yaml.dump({"actor": {}}))
    checkpoint = torch.load(trained["mlp"].model, weights_only=True)
    checkpoint["actor_state_dict"]["mlp.9.scale"] = torch.ones(3)
    torch.save(checkpoint, run_dir / "model_2.pt")
    reason = "the weights do not fit the rebuilt actor: unexpected mlp.9.scale"
    assert reason in zoo("check", run_dir, "--json").json()[0]["reason"]
    result = zoo_eval(run_dir, tmp_path / "eval.json", "--env-id", ENV_ID)
    assert result.exit_code == 1 and reason in result.stderr  # the key named, as zoo check names it
    wrong_env = zoo_eval(
        trained["mlp"].run_dir, tmp_path / "eval.json", "--env-id", "MountainCarContinuous-v0"
    )
    assert wrong_env.exit_code == 1
    assert "the actor takes 3 observations, MountainCarContinuous-v0 gives 2" in wrong_env.stderr
    wrong_kind = zoo_eval(trained["mlp"].run_dir, tmp_path / "eval.json", "--env-id", "CartPole-v1")
    assert (
        wrong_kind.exit_code == 1
        and "rsl_ppo acts on a Box action space; CartPole-v1's is Discrete(2)" in (wrong_kind.stderr)
    )


@pytest.mark.parametrize("kind", ["mlp", "lstm", "gru"])
def test_exports_score_like_the_checkpoint_with_state_handled(trained, kind, tmp_path):
    import onnxruntime as ort

    sidecars = assert_exports_act_like_checkpoint(
        trained[kind].run_dir, tmp_path, "--env-id", ENV_ID, continuous=True, episodes=6, num_envs=3
    )
    onnx_meta = sidecars["onnx"]
    assert (
        onnx_meta["normalization"]["kind"] == "rsl_rl_empirical" and onnx_meta["normalization_baked"] is True
    )
    session = ort.InferenceSession(str(tmp_path / "policy.onnx"), providers=["CPUExecutionProvider"])
    names = ([i.name for i in session.get_inputs()], [o.name for o in session.get_outputs()])
    if kind == "mlp":
        assert onnx_meta["is_recurrent"] is False and names == (["obs"], ["actions"])
        return
    layers = {"lstm": 1, "gru": 2}[kind]
    assert onnx_meta["is_recurrent"] is True and onnx_meta["parity"]["steps"] == 64
    recurrent = onnx_meta["recurrent"]
    assert (
        recurrent["rnn_type"] == kind
        and recurrent["rnn_num_layers"] == layers
        and recurrent["rnn_hidden_dim"] == 16
    )
    states = ["h_in", "c_in"] if kind == "lstm" else ["h_in"]
    assert recurrent["state_shapes"] == {name: [layers, "batch", 16] for name in states}
    expected = (
        (["obs", "h_in", "c_in"], ["actions", "h_out", "c_out"])
        if kind == "lstm"
        else (["obs", "h_in"], ["actions", "h_out"])
    )
    assert names == expected and recurrent["inputs"] == expected[0] and recurrent["outputs"] == expected[1]
    h_in = session.get_inputs()[1]
    assert h_in.shape[0] == layers and isinstance(h_in.shape[1], str) and h_in.shape[2] == 16


def test_torchscript_recurrent_export_keeps_state_inside_and_resets_per_env(trained, tmp_path):
    import torch

    path = tmp_path / "p.ts"
    assert zoo("export", trained["lstm"].run_dir, "--env-id", ENV_ID, "--out", path, "-q").exit_code == 0
    module, twin = torch.jit.load(str(path)), torch.jit.load(str(path))
    obs = torch.randn(4, 3)
    first = module(obs)
    twin(obs)
    assert not torch.equal(module(obs), first)  # the state moved on
    twin(obs)
    module.reset_envs(torch.tensor([True, False, True, False]))
    again, carried = module(obs), twin(obs)
    assert torch.equal(again[0::2], first[0::2])  # envs 0 and 2 start from zeros
    assert torch.equal(again[1::2], carried[1::2]) and not torch.equal(again[1::2], first[1::2])
    module.reset()
    assert torch.equal(module(obs), first)  # reset() starts every env from zeros again
    assert module(torch.randn(7, 3)).shape == (7, 1)  # another batch size starts from fresh state
