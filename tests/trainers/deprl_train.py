"""Train DEP-RL (deprl 0.3.2) with its own launcher, ``python -m deprl.main config.json``, on Pendulum-v1.

Usage: ``deprl_train.py WORKING_DIR NAME STEPS SAVE_STEPS``. deprl writes ``WORKING_DIR/NAME/`` (config.yaml,
log.csv, script.py, checkpoints/step_<N>.pt, time.pt, obs_norm.pt, ... with ``full_save``). The config is
deprl's elbow example (DEP exploration switching with MPO, ``dep_factory(3, TunedMPO())``) made small; its
header imports deprl_oldgym (beside this script), which serves Pendulum-v1 in the old gym API tonic needs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEP = {
    "test_episode_every": 3,
    "kappa": 1169.7,
    "tau": 40,
    "buffer_size": 200,
    "bias_rate": 0.002,
    "s4avg": 2,
    "time_dist": 5,
    "normalization": "independent",
    "sensor_delay": 1,
    "regularization": 32,
    "with_learning": True,
    "q_norm_selector": "l2",
    "intervention_length": 5,
    "intervention_proba": 0.0004,
}


def config(working_dir: str, name: str, steps: int, save_steps: int) -> dict:
    replay = (
        "deprl.replays.buffers.Buffer(return_steps=3, batch_size=32, steps_between_batches=50, "
        "batch_iterations=2, steps_before_batches=200, size=int(1e4))"
    )
    return {
        "tonic": {
            "header": "import deprl, deprl_oldgym",
            "agent": f"deprl.custom_agents.dep_factory(3, deprl.custom_mpo_torch.TunedMPO())(replay={replay})",
            "environment": "deprl.environments.Gym('Pendulum-v1', scaled_actions=True)",
            "test_environment": None,
            "trainer": f"deprl.custom_trainer.Trainer(steps=int({steps}), epoch_steps=int({save_steps}), "
            f"save_steps=int({save_steps}), test_episodes=2)",
            "before_training": "",
            "after_training": "",
            "parallel": 1,
            "sequential": 1,
            "seed": 0,
            "name": name,
            "checkpoint": "last",
            "full_save": 1,
            "resume": 0,
        },
        "working_dir": working_dir,
        "mpo_args": {"hidden_size": 32},
        "env_args": {},
        "DEP": DEP,
    }


def main() -> None:
    working_dir, name, steps, save_steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    path = Path(working_dir) / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config(working_dir, name, steps, save_steps), indent=1))
    env = dict(os.environ, PYTHONPATH=str(HERE))
    done = subprocess.run(
        [sys.executable, "-m", "deprl.main", str(path)], env=env, capture_output=True, text=True, timeout=600
    )
    run = Path(working_dir) / name
    # deprl 0.3.2 logs "trainer failed. Exception: 'Sequential' object has no attribute 'processes'" once the
    # last checkpoint is saved (close_mp_envs assumes parallel workers); the run is complete by then.
    if done.returncode or not (run / "checkpoints" / f"step_{steps}.pt").is_file():
        sys.exit(f"deprl.main failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    print(json.dumps({"run": str(run)}))


if __name__ == "__main__":
    main()
