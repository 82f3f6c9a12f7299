"""Write files that zoo must not load on its own, so that the docs can show what zoo says about them.

Each kind is a subcommand; each writes into the folder it is given (created if missing)::

    python examples/untrusted_files.py pickles DIR   # DIR/policy.pickle, DIR/evil.pickle
    python examples/untrusted_files.py cleanrl RUNS  # two CleanRL dqn runs under RUNS/ (seeds 5 and 7)

- ``policy.pickle``: a :class:`my_policies.GaussianSwingUp` pickled, as MJRL saves a policy. Benign, but
  unpickling it imports and runs that class's code: ``zoo eval`` loads it only with ``--trust-pickle``.
- ``evil.pickle``, and ``RUNS/CartPole-v1__dqn__5__1796031400/dqn.cleanrl_model`` (a torch file whose
  state dict holds the same object beside a tensor): unpickling either calls ``os.system`` with a command
  (here a harmless ``echo``, the place where an attacker's command would go). zoo names the call and never
  makes it.
- ``RUNS/CartPole-v1__dqn__7__1796031700/dqn.cleanrl_model``: the bundled dqn run's weights saved with an
  ``argparse.Namespace`` beside them, a global zoo cannot check without running it.

docs/frameworks/custom.md and docs/frameworks/cleanrl.md run these; nothing here runs the payloads.
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent
PAYLOAD = "echo 'this file ran a command as it was loaded'"


class RunsACommand:
    """Pickles to ``os.system(PAYLOAD)``: whoever unpickles it runs the command."""

    def __reduce__(self):
        return (os.system, (PAYLOAD,))


def pickles(out: Path) -> list[Path]:
    import gymnasium as gym

    sys.path.insert(0, str(EXAMPLES))
    from my_policies import GaussianSwingUp  # pickled by reference to my_policies, as a user's module

    policy = GaussianSwingUp(gym.make("Pendulum-v1").action_space)
    (out / "policy.pickle").write_bytes(pickle.dumps(policy, protocol=4))
    (out / "evil.pickle").write_bytes(pickle.dumps(RunsACommand(), protocol=4))
    return [out / "policy.pickle", out / "evil.pickle"]


def cleanrl(out: Path) -> list[Path]:
    import torch

    weights = torch.load(
        next((EXAMPLES / "runs").glob("CartPole-v1__dqn__*")) / "dqn.cleanrl_model", weights_only=True
    )
    unsafe = out / "CartPole-v1__dqn__5__1796031400" / "dqn.cleanrl_model"
    namespace = out / "CartPole-v1__dqn__7__1796031700" / "dqn.cleanrl_model"
    for path in (unsafe, namespace):
        path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"network.0.weight": torch.zeros(2), "payload": RunsACommand()}, unsafe)
    torch.save({**weights, "args": argparse.Namespace(exp_name="dqn", seed=7)}, namespace)
    return [unsafe, namespace]


KINDS = {"pickles": pickles, "cleanrl": cleanrl}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=sorted(KINDS))
    parser.add_argument("out", type=Path, help="the folder to write into")
    cli = parser.parse_args()
    cli.out.mkdir(parents=True, exist_ok=True)
    for path in KINDS[cli.kind](cli.out):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
