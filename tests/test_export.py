"""``zoo export``: parity-checked TorchScript/ONNX files, their sidecar, and ``zoo eval`` of them.

Framework-specific exports (SB3, skrl, rsl_rl) are tested next to each adapter's trained fixtures;
this file covers the CleanRL example runs and the exporter's own contract.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers import EXAMPLES, assert_exports_act_like_checkpoint, zoo

RUNS = {p.name.split("__")[1]: p for p in EXAMPLES.iterdir() if p.is_dir()}
DESIGN_FIELDS = (
    "task",
    "checkpoint",
    "obs_dim",
    "obs_groups",
    "action_dim",
    "action_range",
    "normalization_baked",
    "is_recurrent",
    "recurrent",
    "format",
    "opset",
    "exported_at",
    "torch_version",
    "zoo_version",
    "parity",
)


@pytest.mark.parametrize("exp_name", ["dqn", "c51", "td3_continuous_action"])
def test_cleanrl_exports_score_like_the_checkpoint_episode_for_episode(exp_name, tmp_path):
    sidecars = assert_exports_act_like_checkpoint(
        RUNS[exp_name], tmp_path, continuous=exp_name.startswith("td3"), episodes=8
    )
    for meta in sidecars.values():
        assert meta["parity"]["samples"] == 257 and meta["parity"]["batch_sizes"] == [256, 1]
        assert meta["parity"]["max_abs_diff"] <= meta["parity"]["tolerance"]
        assert meta["exp_name"] == exp_name and meta["framework"] == "cleanrl"


def _td3_policy():
    import zoo

    target = zoo.resolve(RUNS["td3_continuous_action"])
    return target, zoo.load_policy(target)


def test_sidecar_follows_the_design_and_the_files_carry_the_same_facts(tmp_path):
    import onnx
    import onnxruntime as ort
    import torch

    for suffix in (".onnx", ".ts"):
        assert (
            zoo("export", RUNS["td3_continuous_action"], "--out", tmp_path / f"p{suffix}", "-q").exit_code
            == 0
        )
    onnx_meta = json.loads((tmp_path / "p.onnx.metadata.json").read_text())
    ts_meta = json.loads((tmp_path / "p.ts.metadata.json").read_text())
    for meta in (onnx_meta, ts_meta):
        assert all(field in meta for field in DESIGN_FIELDS)
        assert meta["task"] == "Pendulum-v1" and meta["env"] == {"id": "Pendulum-v1", "preset": "classic"}
        whole = {"name": "obs", "start": 0, "dim": 3, "scale": 1.0, "clip": None}
        assert meta["obs_dim"] == 3 and meta["obs_groups"] == {
            "obs": {"start": 0, "dim": 3, "shape": [3], "terms": [whole]}
        }
        assert meta["obs_terms_baked"] is True
        assert meta["action_dim"] == 1 and meta["action_range"] == [-2.0, 2.0]
        assert meta["is_recurrent"] is False and meta["recurrent"] is None
        assert meta["normalization_baked"] is False and meta["left_to_caller"] == []
        assert {"max_abs_diff", "samples", "tolerance"} <= set(meta["parity"])
        assert meta["parity"]["tolerance"] == 1e-5
    assert (
        onnx_meta["format"] == "onnx"
        and onnx_meta["opset"] == 17
        and onnx_meta["exporter"]["name"] == "dynamo"
    )
    assert ts_meta["format"] == "torchscript" and ts_meta["opset"] is None

    model = onnx.load(str(tmp_path / "p.onnx"))
    props = {p.key: json.loads(p.value) for p in model.metadata_props}
    assert props == {k: v for k, v in onnx_meta.items() if k != "file_sha256"}
    extra = {"zoo_metadata.json": ""}
    torch.jit.load(str(tmp_path / "p.ts"), _extra_files=extra)
    assert json.loads(extra["zoo_metadata.json"]) == {k: v for k, v in ts_meta.items() if k != "file_sha256"}

    # One float32 input "obs" and one output "actions", batch axis dynamic.
    session = ort.InferenceSession(str(tmp_path / "p.onnx"), providers=["CPUExecutionProvider"])
    (inp,), (out,) = session.get_inputs(), session.get_outputs()
    assert (inp.name, inp.type, out.name) == ("obs", "tensor(float)", "actions")
    assert isinstance(inp.shape[0], str)
    for batch in (1, 5, 1000):
        obs = np.random.default_rng(batch).normal(size=(batch, 3)).astype(np.float32)
        actions = session.run(None, {"obs": obs})[0]
        assert actions.shape == (batch, 1) and np.all(np.abs(actions) <= 2.0 + 1e-6)


def test_eval_of_an_exported_file_records_where_it_came_from(tmp_path):
    assert zoo("export", RUNS["dqn"], "--out", tmp_path / "p.onnx", "-q").exit_code == 0
    result = zoo("eval", tmp_path / "p.onnx", "-n", "2", "--json", "-q")
    assert result.exit_code == 0, result.stderr
    data = result.json()
    assert data["task"] == "CartPole-v1" and data["deterministic"] is True and data["device"] == "cpu"
    assert data["source"]["exported"]["format"] == "onnx"
    assert data["source"]["exported"]["checkpoint"].endswith("dqn.cleanrl_model")
    assert (tmp_path / "p.onnx.eval.json").is_file()


class _NormalizingSource:
    """Test double of a framework wrapper: normalizes observations before its network acts.

    ``export_spec`` either keeps the normalizer (as every adapter must) or drops it (the bug the
    parity check exists for).
    """

    def __init__(self, inner, keep_normalizer: bool):
        self.inner, self.keep = inner, keep_normalizer
        self.observation_space, self.action_space = inner.observation_space, inner.action_space
        self.is_recurrent = False
        self.mean, self.std = np.array([0.5, -0.5, 2.0], np.float32), np.array([2.0, 0.5, 4.0], np.float32)

    def act(self, obs, state=None, deterministic=True):
        return self.inner.act((obs - self.mean) / self.std, state, deterministic)

    def reset(self, done_mask):
        pass

    def export_spec(self):
        import torch

        spec = self.inner.export_spec()
        if self.keep:
            mean, std, net = torch.from_numpy(self.mean), torch.from_numpy(self.std), spec.module

            class Normalized(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.net = net

                def forward(self, x):
                    return self.net((x - mean) / std)

            spec.module = Normalized()
        return spec


@pytest.mark.parametrize("fmt", ["onnx", "torchscript"])
def test_export_that_drops_the_normalizer_fails_parity_and_leaves_no_file(fmt, tmp_path):
    from zoo.errors import ZooError
    from zoo.exporter import export_policy

    _, policy = _td3_policy()
    out = tmp_path / "out" / f"policy.{fmt}"
    facts = {
        "task": "Pendulum-v1",
        "env": {"id": "Pendulum-v1", "preset": "classic"},
        "exp_name": "td3",
        "framework": "test",
        "checkpoint": "x",
    }
    with pytest.raises(ZooError, match="parity check failed: max \\|diff\\|"):
        export_policy(
            _NormalizingSource(policy, keep_normalizer=False), target=facts, preset_notes=[], fmt=fmt, out=out
        )
    assert list(tmp_path.iterdir()) == []  # no file, no sidecar, no temp folder, not even the folder
    result = export_policy(
        _NormalizingSource(policy, keep_normalizer=True), target=facts, preset_notes=[], fmt=fmt, out=out
    )
    assert result.meta["parity"]["max_abs_diff"] <= 1e-5
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [out.name, out.name + ".metadata.json"]


def test_failed_export_from_the_cli_is_one_line_and_keeps_the_previous_file(tmp_path, monkeypatch):
    from zoo.frameworks.cleanrl.policy import CleanRLPolicy

    out = tmp_path / "policy.onnx"
    out.write_bytes(b"previous export")
    real = CleanRLPolicy.export_spec

    def off_by_a_little(self):
        import torch

        spec = real(self)
        net = spec.module

        class Scaled(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.net = net

            def forward(self, x):
                return self.net(x) * 1.001

        spec.module = Scaled()
        return spec

    monkeypatch.setattr(CleanRLPolicy, "export_spec", off_by_a_little)
    result = zoo("export", RUNS["td3_continuous_action"], "--out", out)
    assert result.exit_code == 1
    assert result.stderr.count("error:") == 1 and "parity check failed" in result.stderr
    assert "Traceback" not in result.stderr
    assert out.read_bytes() == b"previous export"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["policy.onnx"]


def test_dynamo_failure_falls_back_to_legacy_and_says_so(tmp_path, monkeypatch):
    import torch

    real = torch.onnx.export

    def dynamo_breaks(*args, dynamo=True, **kwargs):
        if dynamo:
            raise RuntimeError("Unsupported: torch.distributions\nmore detail")
        return real(*args, dynamo=False, **kwargs)

    monkeypatch.setattr(torch.onnx, "export", dynamo_breaks)
    result = zoo("export", RUNS["dqn"], "--out", tmp_path / "p.onnx")
    assert result.exit_code == 0, result.stderr
    assert (
        "note: dynamo exporter passed over (export failed: RuntimeError: Unsupported: torch.distributions)"
        in (" ".join(result.stderr.split()))
    )
    meta = json.loads((tmp_path / "p.onnx.metadata.json").read_text())
    assert meta["exporter"]["name"] == "legacy" and "dynamo" in meta["exporter"]["passed_over"]
    assert meta["opset"] == 17 and meta["parity"]["samples"] == 257

    forced = zoo("export", RUNS["dqn"], "--out", tmp_path / "q.onnx", "--exporter", "dynamo")
    assert forced.exit_code == 1 and "dynamo: export failed" in forced.stderr
    assert not (tmp_path / "q.onnx").exists()


def test_bad_export_and_exported_eval_input_is_one_clear_line(tmp_path):
    run = tmp_path / RUNS["dqn"].name
    shutil.copytree(RUNS["dqn"], run)
    default = zoo("export", run, "-q")
    assert (
        default.exit_code == 0 and (run / "dqn.onnx").is_file() and (run / "dqn.onnx.metadata.json").is_file()
    )
    assert zoo("export", run, "--out", tmp_path / "x.ts", "-q").exit_code == 0
    assert json.loads((tmp_path / "x.ts.metadata.json").read_text())["format"] == "torchscript"

    cases = {
        "already an exported policy": (("export", run / "dqn.onnx"), 1),
        "is a folder": (("export", run, "--out", tmp_path), 1),
        "only acts deterministically": (("eval", run / "dqn.onnx", "--stochastic"), 2),
        "does not fit Acrobot-v1: the file takes observations of shape [4], the env gives [6]": (
            ("eval", run / "dqn.onnx", "--env-id", "Acrobot-v1"),
            1,
        ),
        "does not fit MountainCar-v0": (
            ("eval", run / "dqn.onnx", "--env-id", "MountainCar-v0", "--out", tmp_path / "mc.json"),
            1,
        ),
    }
    lone = tmp_path / "lone.onnx"
    shutil.copy(run / "dqn.onnx", lone)
    cases["no sidecar lone.onnx.metadata.json"] = (("eval", lone), 1)
    tampered = tmp_path / "tampered.onnx"
    shutil.copy(run / "dqn.onnx", tampered)
    shutil.copy(run / "dqn.onnx.metadata.json", tmp_path / "tampered.onnx.metadata.json")
    tampered.write_bytes(tampered.read_bytes() + b"\0")
    cases["does not match its sidecar"] = (("eval", tampered), 1)
    for message, (args, code) in cases.items():
        result = zoo(*args)
        assert result.exit_code == code, (message, result.stderr)
        assert message in " ".join(result.stderr.split()) and result.stderr.count("error:") == 1, (
            result.stderr
        )
        assert "Traceback" not in result.stderr
    assert not (tmp_path / "mc.json").exists()


def test_an_exported_file_fits_only_envs_with_its_input_and_output_layout(tmp_path):
    from gymnasium import spaces

    from zoo.exporter.runtime import fit_problem, read_sidecar

    out = tmp_path / "dqn.onnx"
    assert zoo("export", RUNS["dqn"], "--out", out, "-q").exit_code == 0
    meta = read_sidecar(out)
    box4 = spaces.Box(-1, 1, (4,))
    assert fit_problem(meta, box4, spaces.Discrete(2)) is None
    assert fit_problem(meta, box4, spaces.Discrete(3)) == "the file's actions have num_actions 2, the env's 3"
    assert "action_type discrete, the env's continuous" in fit_problem(meta, box4, spaces.Box(-1, 1, (2,)))
    assert "shape [4], the env gives [2, 2]" in fit_problem(
        meta, spaces.Box(-1, 1, (2, 2)), spaces.Discrete(2)
    )


def test_work_folder_of_a_killed_export_is_removed_by_the_next_and_ignored_by_check(tmp_path):
    """kill -9 during an export leaves ``.policy.onnx.XXXX/``: nobody holds its lock, so it is stale."""
    import subprocess
    import sys

    run = tmp_path / "runs" / RUNS["dqn"].name
    shutil.copytree(RUNS["dqn"], run)
    out = run / "policy.onnx"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys, time\nfrom pathlib import Path\nfrom zoo.atomic import private_workdir\n"
                f"with private_workdir(Path({str(run)!r}), '.policy.onnx.') as w:\n"
                "    (w / 'policy.onnx').write_bytes(b'half an onnx file')\n    print(w, flush=True)\n    time.sleep(60)\n"
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    stale = Path(holder.stdout.readline().strip())
    live = zoo("export", run, "--out", tmp_path / "elsewhere.onnx", "-q")  # another export, other folder
    assert live.exit_code == 0 and stale.is_dir()
    again = zoo("export", run, "--out", out, "-q")
    assert again.exit_code == 0 and stale.is_dir()  # a live process's work folder is never touched
    holder.kill()
    holder.wait()
    assert stale.is_dir() and (stale / "policy.onnx").is_file()  # what kill -9 leaves behind

    checked = zoo("check", tmp_path / "runs", "--json")
    assert checked.exit_code == 0 and [r["run"]["run_name"] for r in checked.json()] == [run.name]
    assert zoo("export", run, "--out", out, "-q").exit_code == 0
    assert not stale.exists()
    assert sorted(p.name for p in run.iterdir() if p.name.startswith(".")) == []


@pytest.mark.parametrize(
    "exp_name, env_id, note",
    [
        ("ppo_continuous_action", "HalfCheetah-v5", "did not save these statistics"),
        ("dqn_atari", "BreakoutNoFrameskip-v4", "Atari preprocessing"),
    ],
)
def test_cleanrl_env_wrappers_a_deployment_must_redo_are_in_the_sidecar(exp_name, env_id, note, tmp_path):
    """Fresh weights (the export is about the computation, not the score) on the two preset stacks."""
    import ale_py  # noqa: F401 - registers the Atari envs that make_run builds the model for
    from helpers import make_run

    run = make_run(tmp_path, env_id, exp_name)
    sidecars = assert_exports_act_like_checkpoint(
        run, tmp_path, episodes=2, num_envs=2, continuous=exp_name.startswith("ppo")
    )
    for meta in sidecars.values():
        assert any(note in line for line in meta["left_to_caller"]), meta["left_to_caller"]
        assert meta["normalization_baked"] is False
    if exp_name == "dqn_atari":
        assert sidecars["onnx"]["obs_shape"] == [4, 84, 84] and sidecars["onnx"]["action_type"] == "discrete"
    else:
        assert any("ClipAction" in line for line in sidecars["onnx"]["left_to_caller"])


@pytest.mark.parametrize(
    "exp_name, env_id",
    [
        ("ddpg_continuous_action", "Pendulum-v1"),
        ("c51_atari", "BreakoutNoFrameskip-v4"),
        ("qdagger_dqn_atari_impalacnn", "BreakoutNoFrameskip-v4"),
    ],
)
def test_every_other_cleanrl_experiment_exports_with_parity(exp_name, env_id, tmp_path):
    """The rest of the CleanRL registry: both formats pass the parity check (fresh weights)."""
    import ale_py  # noqa: F401 - registers the Atari envs
    from helpers import make_run

    run = make_run(tmp_path, env_id, exp_name)
    for suffix in (".onnx", ".ts"):
        result = zoo("export", run, "--out", tmp_path / f"policy{suffix}", "--json", "-q")
        assert result.exit_code == 0, result.stderr
        meta = result.json()
        assert meta == json.loads((tmp_path / f"policy{suffix}.metadata.json").read_text())
        assert meta["parity"]["max_abs_diff"] <= meta["parity"]["tolerance"]
        assert meta["parity"]["exact"] is (exp_name != "ddpg_continuous_action")
