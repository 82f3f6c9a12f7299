"""Made the files in this folder: policies exported by zoo 0.1.0 at commit b47236e, before issue 29.

That exporter laid goal-conditioned Dict observations out in alphabetical key order, wrote ``action_range``
as ``{low, high}`` and the recurrent block's sizes as ``num_layers``/``hidden_dim``. tests/test_export_contract.py
checks that the exporter of today still evaluates them, each by its own sidecar. Run from the repository root, at
that commit, with the test venv: ``PYTHONPATH=. .venv/bin/python tests/data/exported_before/make_exported_before.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))  # tests/: test_sb3 registers ZooSB3Goal-v0


def main() -> None:
    import test_sb3  # noqa: F401 - registers ZooSB3Goal-v0
    from helpers import zoo
    from sb3_contrib import RecurrentPPO
    from stable_baselines3 import SAC, HerReplayBuffer

    torch.set_num_threads(1)
    small = {"net_arch": [32, 32]}
    her = SAC(
        "MultiInputPolicy",
        "ZooSB3Goal-v0",
        replay_buffer_class=HerReplayBuffer,
        replay_buffer_kwargs={"n_sampled_goal": 2},
        learning_starts=64,
        policy_kwargs=small,
        seed=0,
    )
    her.learn(200).save(HERE / "sac-ZooSB3Goal-v0.zip")
    lstm = RecurrentPPO(
        "MlpLstmPolicy",
        "Pendulum-v1",
        n_steps=32,
        batch_size=32,
        n_epochs=1,
        policy_kwargs={"net_arch": {"pi": [32], "vf": [32]}, "lstm_hidden_size": 16},
        seed=0,
    )
    lstm.learn(64).save(HERE / "ppo_lstm-Pendulum-v1.zip")
    for name in ("sac-ZooSB3Goal-v0", "ppo_lstm-Pendulum-v1"):
        for suffix in (".onnx", ".ts"):
            done = zoo("export", HERE / f"{name}.zip", "--out", HERE / f"{name}{suffix}", "-q")
            assert done.exit_code == 0, done.stderr


if __name__ == "__main__":
    main()
