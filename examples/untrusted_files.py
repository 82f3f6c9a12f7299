"""Write files that zoo must not load on its own, so that the docs can show what zoo says about them.

Each kind is a subcommand; each writes into the folder it is given (created if missing)::

    python examples/untrusted_files.py pickles DIR   # DIR/policy.pickle, DIR/evil.pickle
    python examples/untrusted_files.py cleanrl RUNS  # two CleanRL dqn runs under RUNS/ (seeds 5 and 7)
    python examples/untrusted_files.py broken RUNS   # one CleanRL run per other kind of problem, under RUNS/
    python examples/untrusted_files.py rl_zoo3 RUN   # code planted in an rl_zoo3 run dir (a copy), in place
    python examples/untrusted_files.py no-optimizer RUN  # an rl_zoo3 run dir's model zip without its optimizer
    python examples/untrusted_files.py sb3 TREE      # TREE/models/ppo-CartPole-v1-planted.zip, TREE/custom/ppo-CartPole-v1.zip
    python examples/untrusted_files.py sb3-broken TREE  # TREE/bad/logs/..., TREE/damaged/...: spoiled SB3 files
    python examples/untrusted_files.py rsl_rl LOGS   # LOGS/evil/cfgs.pkl, LOGS/rsl_rl/evil/.../model_9.pt
    python examples/untrusted_files.py skrl DIR      # DIR/logs/skrl/Pendulum-v1/..._ppo_torch/checkpoints/agent_2000.pt
    python examples/untrusted_files.py diverged RUNS # a CleanRL dqn run whose last layer is NaN, under RUNS/
    python examples/untrusted_files.py loaders DIR   # SB3 files the libraries' own loaders would run code from

- ``policy.pickle``: a :class:`my_policies.GaussianSwingUp` pickled, as MJRL saves a policy. Benign, but
  unpickling it imports and runs that class's code: ``zoo eval`` loads it only with ``--trust-pickle``.
- ``evil.pickle``, and ``RUNS/CartPole-v1__dqn__5__1796031400/dqn.cleanrl_model`` (a torch file whose
  state dict holds the same object beside a tensor): unpickling either calls ``os.system`` with a command
  (here a harmless ``echo``, the place where an attacker's command would go). zoo names the call and never
  makes it.
- ``RUNS/CartPole-v1__dqn__7__1796031700/dqn.cleanrl_model``: the bundled dqn run's weights saved with an
  ``argparse.Namespace`` beside them, a global zoo cannot check without running it.
- ``broken``: runs whose model is the bundled dqn run's, each spoiled one way: in an Acrobot run (shapes),
  cut short (``__2``), missing (``__3``), named for another experiment (``c51__4``), of an experiment the
  registry does not know (``ddqn``), a ``data.pkl`` that hides ``os.system`` behind strings it pops (``__6``),
  one byte of a tensor flipped (``__8``, only the CRC tells), ``data.pkl`` replaced by 512 MiB of zeros
  deflated to half a MiB (``__9``), a symlink to itself (``__10``); and the model alone at the top of RUNS.
- ``rl_zoo3``: in a run dir that ``python -m rl_zoo3.train`` wrote, the model zip's ``data['lr_schedule']`` becomes
  a pickle calling ``os.system`` (SB3's ``load`` unpickles every ``:serialized:`` value), and ``config.yml`` gets
  an ``env_wrapper`` tagged ``!!python/object/apply:os.system`` (rl_zoo3 reads it with ``yaml.UnsafeLoader``).
- ``no-optimizer``: the same run dir's model zip without ``policy.optimizer.pth``, as some hub zips are: SB3's
  ``PPO.load`` fails on it, zoo evaluates it.
- ``sb3``: in a TREE holding ``hub/ppo-CartPole-v1.zip`` (an SB3 ``model.save``), two copies of that zip:
  ``models/ppo-CartPole-v1-planted.zip``, whose ``data['observation_space']`` pickle calls ``os.system``, and
  ``custom/ppo-CartPole-v1.zip``, whose ``policy_kwargs`` name ``torch.nn.Hardtanh`` (benign, but a class zoo
  cannot check without running it).
- ``sb3-broken``: from the same TREE's zip and its rl_zoo3 run ``logs/ppo/Pendulum-v1_1`` (trained with
  ``normalize``): ``bad/logs/ppo/Pendulum-v1_1``, whose ``vecnormalize.pkl`` calls ``os.system``; and under
  ``damaged/``, the zip with one byte of ``policy.pth`` flipped (``flipped/``), the zip whose ``policy.pth`` holds
  an ``os.system`` payload beside the weights (``planted/``), the run whose ``data`` inflates to 512 MiB
  (``logs/ppo/Pendulum-v1_2``) and the run with a sparse 8 GiB ``vecnormalize.pkl`` (``logs/ppo/Pendulum-v1_3``).
- ``rsl_rl``: ``LOGS/evil/cfgs.pkl``, a Genesis config list whose second item calls ``os.system`` (beside a
  ``model_{iter}.pt`` it is an rsl_rl run in Genesis' layout: the docs copy one there), and
  ``LOGS/rsl_rl/evil/2026-11-30_11-00-00/model_9.pt``, a checkpoint in Isaac Lab's layout that does the same.
- ``skrl``: an skrl checkpoint (a dict of module state dicts) whose ``observation_preprocessor`` holds the same
  call, in Isaac Lab's skrl layout.

- ``diverged``: ``RUNS/CartPole-v1__dqn__9__1796039000``, the bundled dqn run (its training log too) with its last
  layer's weights NaN, as a run that diverged saves them: it loads and acts, and only the values tell.
- ``loaders``: what zoo never runs but SB3's ``load`` and rl_zoo3's YAML loading do, made from the rl_zoo3 run
  ``DIR/logs/ppo/CartPole-v1_1`` (train it first: ``python -m rl_zoo3.train --algo ppo --env CartPole-v1 -f
  DIR/logs``). That run's zip gets an ``os.system`` pickle as ``data['lr_schedule']`` and its ``config.yml`` an
  ``env_wrapper`` tagged ``!!python/object/apply:os.system``; copies of its zip (made before) go to
  ``DIR/hub/ppo-CartPole-v1.zip`` without ``policy.optimizer.pth``, ``DIR/hub/a2c-CartPole-v1.zip`` cut short (its first 8 KiB), and
  ``DIR/old/ppo-CartPole-v1.zip`` with SB3 1.x's schedules (functions pickled by value).

docs/check.md, eval.md, push.md, frameworks/custom.md, cleanrl.md, rsl_rl.md, sb3.md and skrl.md run these;
nothing here runs the payloads.
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


def _rewritten(src: Path, dst: Path, entry: str, data: bytes | None = None, zeros: int = 0) -> None:
    """``src``'s zip archive with ``entry`` (``data.pkl``, ``data/0``, ...) replaced by ``data`` (stored, as torch
    stores), or by ``zeros`` zero bytes deflated."""
    import zipfile

    with zipfile.ZipFile(src) as old, zipfile.ZipFile(dst, "w") as new:
        for info in old.infolist():
            if info.filename.split("/", 1)[1] != entry:
                new.writestr(info, old.read(info))
            elif data is not None:
                new.writestr(info, data)
            else:
                deflated = zipfile.ZipInfo(info.filename)
                deflated.compress_type = zipfile.ZIP_DEFLATED
                with new.open(deflated, "w", force_zip64=True) as out:
                    for _ in range(zeros // 2**20):
                        out.write(bytes(2**20))


def _evasion_pickle() -> bytes:
    """``os.system(PAYLOAD)`` at protocol 4, its global named by STACK_GLOBAL after two strings pushed and popped:
    a scanner that takes the last two strings before STACK_GLOBAL reads ``collections.OrderedDict``."""

    def text(value: str) -> bytes:  # SHORT_BINUNICODE
        return b"\x8c" + bytes([len(value.encode())]) + value.encode()

    return (
        b"\x80\x04"
        + text("posix")
        + text("system")
        + text("collections")
        + b"0"
        + text("OrderedDict")
        + b"0"
        + b"\x93"
        + text(PAYLOAD)
        + b"\x85"
        + b"R"
        + b"."
    )


def _flipped(src: Path, dst: Path, member: str) -> Path:
    """``src`` written to ``dst`` with one byte in the middle of ``member``'s stored bytes flipped: the archive
    still opens, only the member's CRC-32 tells."""
    import zipfile

    raw = bytearray(src.read_bytes())
    with zipfile.ZipFile(src) as archive:
        info = archive.getinfo(member)
    local = raw[info.header_offset : info.header_offset + 30]  # the entry's local header
    names = int.from_bytes(local[26:28], "little") + int.from_bytes(local[28:30], "little")  # name, extra
    start = info.header_offset + 30 + names
    raw[start + info.compress_size // 2] ^= 0xFF
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(bytes(raw))
    return dst


def broken(out: Path) -> list[Path]:
    import shutil

    good = next((EXAMPLES / "runs").glob("CartPole-v1__dqn__*")) / "dqn.cleanrl_model"
    runs = {
        name: out / name
        for name in (
            "Acrobot-v1__dqn__1__1796031200",
            "CartPole-v1__dqn__2__1796031000",
            "CartPole-v1__dqn__3__1796031100",
            "CartPole-v1__c51__4__1796031300",
            "CartPole-v1__ddqn__1__1796031500",
            "CartPole-v1__dqn__6__1796031600",
            "CartPole-v1__dqn__8__1796031800",
            "CartPole-v1__dqn__9__1796031900",
            "CartPole-v1__dqn__10__1796032000",
        )
    }
    for run in runs.values():
        run.mkdir(parents=True, exist_ok=True)
    written = [
        shutil.copy(good, out / "dqn.cleanrl_model"),
        shutil.copy(good, runs["Acrobot-v1__dqn__1__1796031200"] / "dqn.cleanrl_model"),
        shutil.copy(good, runs["CartPole-v1__c51__4__1796031300"] / "dqn.cleanrl_model"),
        shutil.copy(good, runs["CartPole-v1__ddqn__1__1796031500"] / "ddqn.cleanrl_model"),
    ]
    truncated = runs["CartPole-v1__dqn__2__1796031000"] / "dqn.cleanrl_model"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    events = next(good.parent.glob("events.out.tfevents.*"))  # a run that logged, and saved no model
    written += [truncated, Path(shutil.copy(events, runs["CartPole-v1__dqn__3__1796031100"]))]
    evasion = runs["CartPole-v1__dqn__6__1796031600"] / "dqn.cleanrl_model"
    _rewritten(good, evasion, "data.pkl", data=_evasion_pickle())
    flipped = _flipped(good, runs["CartPole-v1__dqn__8__1796031800"] / "dqn.cleanrl_model", "dqn/data/2")
    bomb = runs["CartPole-v1__dqn__9__1796031900"] / "dqn.cleanrl_model"
    _rewritten(good, bomb, "data.pkl", zeros=512 * 2**20)
    loop = runs["CartPole-v1__dqn__10__1796032000"] / "dqn.cleanrl_model"
    loop.symlink_to("dqn.cleanrl_model")
    return [Path(p) for p in written] + [evasion, flipped, bomb, loop]


def diverged(out: Path) -> list[Path]:
    import shutil

    import torch

    good = next((EXAMPLES / "runs").glob("CartPole-v1__dqn__*"))
    run = out / "CartPole-v1__dqn__9__1796039000"
    run.mkdir(parents=True, exist_ok=True)
    weights = torch.load(good / "dqn.cleanrl_model", weights_only=True)
    weights["network.4.weight"] = torch.full_like(weights["network.4.weight"], float("nan"))
    torch.save(weights, run / "dqn.cleanrl_model")
    events = Path(shutil.copy(next(good.glob("events.out.tfevents.*")), run))
    return [run / "dqn.cleanrl_model", events]


def _edit_sb3_zip(
    src: bytes, dst: Path, data=None, drop: str | None = None, version: str | None = None
) -> Path:
    """An SB3 zip (``src``'s bytes) written to ``dst``: its ``data`` JSON updated with ``data``, the member ``drop``
    left out, its ``_stable_baselines3_version`` set to ``version``."""
    import io
    import json
    import zipfile

    dst.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(io.BytesIO(src)) as old, zipfile.ZipFile(dst, "w") as new:
        for info in (i for i in old.infolist() if i.filename != drop):
            raw = old.read(info)
            if info.filename == "data" and data:
                raw = json.dumps({**json.loads(raw), **data}, indent=4).encode()
            elif info.filename == "_stable_baselines3_version" and version:
                raw = version.encode()
            new.writestr(info, raw)
    return dst


def _serialized(value, dumps=pickle.dumps) -> dict:
    """SB3's data entry for a pickled value: what its ``load`` unpickles."""
    import base64

    return {
        ":type:": f"<class '{type(value).__name__}'>",
        ":serialized:": base64.b64encode(dumps(value)).decode(),
    }


def loaders(out: Path) -> list[Path]:
    import cloudpickle

    run = out / "logs" / "ppo" / "CartPole-v1_1"
    model, config = run / "CartPole-v1.zip", run / "CartPole-v1" / "config.yml"
    if not model.is_file() or not config.is_file():
        sys.exit(
            f"error: no rl_zoo3 run at {run}\nhint: python -m rl_zoo3.train --algo ppo --env CartPole-v1 -f {out / 'logs'}"
        )
    clean = model.read_bytes()

    def constant(_progress: float) -> float:  # SB3 1.x's constant_fn returned such a closure
        return 3e-4

    planted, tagged = _plant(clean, model, config)
    written = [
        planted,
        _edit_sb3_zip(clean, out / "hub" / "ppo-CartPole-v1.zip", drop="policy.optimizer.pth"),
        _edit_sb3_zip(
            clean,
            out / "old" / "ppo-CartPole-v1.zip",
            version="1.6.2",
            data={key: _serialized(constant, cloudpickle.dumps) for key in ("lr_schedule", "clip_range")},
        ),
    ]
    cut = out / "hub" / "a2c-CartPole-v1.zip"  # a download that stopped inside the first entry
    cut.write_bytes(clean[:8192])
    return [*written, cut, tagged]


def _model_zip(run: Path) -> Path:
    """An rl_zoo3 run dir's model: ``logs/ppo/CartPole-v1_1/CartPole-v1.zip``."""
    return run / f"{run.name.rsplit('_', 1)[0]}.zip"


def _rezipped(model: Path, member: str, data: bytes | None, zeros: int = 0) -> None:
    """``model`` rewritten in place with ``member`` replaced by ``data``, by ``zeros`` zero bytes deflated (a zip
    bomb's member), or left out when both are unset."""
    import zipfile

    with zipfile.ZipFile(model) as old:
        members = [(info, old.read(info)) for info in old.infolist()]
    with zipfile.ZipFile(model, "w", zipfile.ZIP_DEFLATED) as new:
        for info, raw in members:
            if info.filename != member:
                new.writestr(info, raw)
            elif data is not None:
                new.writestr(info, data)
            elif zeros:
                bomb = zipfile.ZipInfo(member)
                bomb.compress_type = zipfile.ZIP_DEFLATED
                with new.open(bomb, "w", force_zip64=True) as out:
                    for _ in range(zeros // 2**20):
                        out.write(bytes(2**20))


def _sb3_data(model: Path, key: str, value: bytes) -> None:
    """``model`` (an SB3 zip) rewritten in place with ``data[key]``'s pickle replaced by ``value``."""
    import base64
    import json
    import zipfile

    with zipfile.ZipFile(model) as archive:
        data = json.loads(archive.read("data"))
    data[key][":serialized:"] = base64.b64encode(value).decode()
    _rezipped(model, "data", json.dumps(data, indent=4).encode())


def _plant(clean: bytes, model: Path, config: Path) -> list[Path]:
    """``model`` (from the zip ``clean``) with an ``os.system`` pickle as ``data['lr_schedule']``, and rl_zoo3's
    ``config.yml`` with one more ``[key, value]`` pair of its OrderedDict dump, whose value is a call."""
    _edit_sb3_zip(clean, model, data={"lr_schedule": _serialized(RunsACommand())})
    with config.open("a") as yml:
        yml.write(f"  - - env_wrapper\n    - !!python/object/apply:os.system\n      - {PAYLOAD}\n")
    return [model, config]


def rl_zoo3(run: Path) -> list[Path]:
    model = _model_zip(run)
    return _plant(model.read_bytes(), model, next(run.glob("*/config.yml")))


def no_optimizer(run: Path) -> list[Path]:
    model = _model_zip(run)
    return [_edit_sb3_zip(model.read_bytes(), model, drop="policy.optimizer.pth")]


def sb3(tree: Path) -> list[Path]:
    import shutil

    import torch

    model = tree / "hub" / "ppo-CartPole-v1.zip"
    planted, custom = tree / "models" / "ppo-CartPole-v1-planted.zip", tree / "custom" / "ppo-CartPole-v1.zip"
    for path in (planted, custom):
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(model, path)
    _sb3_data(planted, "observation_space", pickle.dumps(RunsACommand(), protocol=4))
    _sb3_data(custom, "policy_kwargs", pickle.dumps({"activation_fn": torch.nn.Hardtanh}, protocol=4))
    return [planted, custom]


def sb3_broken(tree: Path) -> list[Path]:
    import io
    import shutil
    import zipfile

    import torch

    model, run = tree / "hub" / "ppo-CartPole-v1.zip", tree / "logs" / "ppo" / "Pendulum-v1_1"
    runs = {
        name: shutil.copytree(run, tree / name)
        for name in (
            "bad/logs/ppo/Pendulum-v1_1",
            "damaged/logs/ppo/Pendulum-v1_2",
            "damaged/logs/ppo/Pendulum-v1_3",
        )
    }
    unsafe_stats = runs["bad/logs/ppo/Pendulum-v1_1"] / "Pendulum-v1" / "vecnormalize.pkl"
    unsafe_stats.write_bytes(pickle.dumps(RunsACommand(), protocol=4))
    bomb = _model_zip(runs["damaged/logs/ppo/Pendulum-v1_2"])
    _rezipped(bomb, "data", None, zeros=512 * 2**20)
    huge = runs["damaged/logs/ppo/Pendulum-v1_3"] / "Pendulum-v1" / "vecnormalize.pkl"
    with huge.open("r+b") as out:
        out.truncate(8 * 2**30)  # sparse: 8 GiB on paper, nothing on disk
    flipped = _flipped(model, tree / "damaged" / "flipped" / "ppo-CartPole-v1.zip", "policy.pth")
    planted = tree / "damaged" / "planted" / "ppo-CartPole-v1.zip"
    planted.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(model, planted)
    with zipfile.ZipFile(model) as archive:
        weights = torch.load(io.BytesIO(archive.read("policy.pth")), weights_only=True)
    payload = io.BytesIO()
    torch.save({**weights, "payload": RunsACommand()}, payload)
    _rezipped(planted, "policy.pth", payload.getvalue())
    return [unsafe_stats, bomb, huge, flipped, planted]


def rsl_rl(out: Path) -> list[Path]:
    import torch

    config = out / "evil" / "cfgs.pkl"
    checkpoint = out / "rsl_rl" / "evil" / "2026-11-30_11-00-00" / "model_9.pt"
    for path in (config, checkpoint):
        path.parent.mkdir(parents=True, exist_ok=True)
    config.write_bytes(pickle.dumps([{"algorithm": {}}, RunsACommand()], protocol=4))
    torch.save({"actor_state_dict": {"mlp.0.weight": torch.zeros(2)}, "payload": RunsACommand()}, checkpoint)
    return [config, checkpoint]


def skrl(out: Path) -> list[Path]:
    import torch

    checkpoint = out / "logs/skrl/Pendulum-v1/2026-11-30_12-00-00_ppo_torch/checkpoints/agent_2000.pt"
    checkpoint.parent.mkdir(parents=True, exist_ok=True)
    modules = {
        "policy": {"net_container.0.weight": torch.zeros(32, 3)},
        "observation_preprocessor": {"running_mean": torch.zeros(3), "payload": RunsACommand()},
    }
    torch.save(modules, checkpoint)
    return [checkpoint]


KINDS = {
    "pickles": pickles,
    "cleanrl": cleanrl,
    "broken": broken,
    "diverged": diverged,
    "loaders": loaders,
    "rl_zoo3": rl_zoo3,
    "no-optimizer": no_optimizer,
    "sb3": sb3,
    "sb3-broken": sb3_broken,
    "rsl_rl": rsl_rl,
    "skrl": skrl,
}


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
