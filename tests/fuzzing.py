"""Seeded, reproducible fuzzing of zoo's verification, for the test suite and ``benchmarks/fuzz.py``.

Seeds are real artifacts written by the real libraries (CleanRL's example runs, SB3's ``save`` and
``VecNormalize.save``, skrl's trainer, rsl_rl's ``OnPolicyRunner.save``, a Genesis-style ``cfgs.pkl``).
Each case takes one seed, mutates its file (byte flips, truncation, entries re-zipped with valid CRCs
but wrong content, zip bombs, hostile pickles from :mod:`payloads`, ...), and then asks:

- ``zoo check --json`` (the command itself, in-process): what verdict, did anything but a one-line error
  escape, is stdout JSON, and did nothing else reach the terminal (a traceback, a warning, an exception
  numpy could only print)? A run that vanishes because its model file is damaged is a failure too: a
  corrupt model where a run's model is expected is that run's error row;
- the real loaders, as the oracle for an ``ok``: ``zipfile.testzip()`` of every archive, torch's own
  ``torch.load(weights_only=True)``, and zoo's loader (the one ``zoo eval`` uses) followed by one action;
- did it finish before the hang guard, and did any payload's canary appear?

A case number fully determines its mutant (``random.Random(f"{format}:{number}")``), so a failure
reported by the soak is reproduced by running that one case again.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import io
import json
import random
import shutil
import signal
import sys
import time
import traceback
import warnings
import zipfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from payloads import Payload, payloads

FORMATS = ("cleanrl", "cleanrl-legacy", "sb3", "vecnormalize", "skrl", "rsl_rl", "cfgs")
CASE_SECONDS = 60.0  # a case over this is a hang (a generous guard: the slowest case takes seconds)
#: Warnings Python itself shows no user (its default filters), so not stray output.
_HIDDEN_WARNINGS = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)


@dataclass
class Seed:
    """A real run folder and the one file in it that the mutants replace."""

    format: str
    run: Path
    target: Path
    original: bytes = b""
    env_id: str | None = None  # for runs whose folder does not name it (zoo eval --env-id)

    def __post_init__(self) -> None:
        self.original = self.target.read_bytes()


# ---------------------------------------------------------------------------------------------- seeds
def _cleanrl(root: Path) -> tuple[Seed, Seed]:
    import torch
    from helpers import EXAMPLES

    src = next(EXAMPLES.glob("CartPole-v1__dqn__*"))
    run = root / "runs" / src.name
    shutil.copytree(src, run)
    legacy = root / "runs" / "CartPole-v1__dqn__2__1700000000"
    legacy.mkdir()
    weights = torch.load(run / "dqn.cleanrl_model", weights_only=True)
    torch.save(weights, legacy / "dqn.cleanrl_model", _use_new_zipfile_serialization=False)
    return Seed("cleanrl", run, run / "dqn.cleanrl_model"), Seed(
        "cleanrl-legacy", legacy, legacy / "dqn.cleanrl_model"
    )


def _sb3(root: Path) -> tuple[Seed, Seed]:
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    run = root / "logs" / "ppo" / "Pendulum-v1_1"  # rl_zoo3's layout
    (run / "Pendulum-v1").mkdir(parents=True)
    venv = VecNormalize(make_vec_env("Pendulum-v1", n_envs=2, seed=0))
    PPO("MlpPolicy", venv, n_steps=32, batch_size=32, n_epochs=1, seed=0).learn(64).save(
        run / "Pendulum-v1.zip"
    )
    venv.save(run / "Pendulum-v1" / "vecnormalize.pkl")
    return Seed("sb3", run, run / "Pendulum-v1.zip"), Seed(
        "vecnormalize", run, run / "Pendulum-v1" / "vecnormalize.pkl"
    )


_SKRL_CFG = {
    "seed": 42,
    "models": {
        "separate": True,
        "policy": {
            "class": "GaussianMixin",
            "clip_actions": False,
            "clip_log_std": True,
            "min_log_std": -20.0,
            "max_log_std": 2.0,
            "initial_log_std": 0.0,
            "network": [{"name": "net", "input": "OBSERVATIONS", "layers": [16], "activations": "elu"}],
            "output": "2 * tanh(ACTIONS)",
        },
        "value": {
            "class": "DeterministicMixin",
            "clip_actions": False,
            "network": [{"name": "net", "input": "OBSERVATIONS", "layers": [16], "activations": "elu"}],
            "output": "ONE",
        },
    },
    "memory": {"class": "RandomMemory", "memory_size": -1},
    "agent": {
        "class": "PPO",
        "rollouts": 16,
        "learning_epochs": 1,
        "mini_batches": 1,
        "learning_rate": 1e-3,
        "observation_preprocessor": "RunningStandardScaler",
        "observation_preprocessor_kwargs": None,
        "experiment": {"write_interval": 0, "checkpoint_interval": 32},
    },
    "trainer": {
        "class": "SequentialTrainer",
        "timesteps": 32,
        "headless": True,
        "disable_progressbar": True,
        "close_environment_at_exit": False,
    },
}


def _skrl(root: Path) -> Seed:
    import gymnasium as gym
    import yaml
    from skrl.envs.wrappers.torch import wrap_env
    from skrl.utils.runner.torch import Runner

    logs, name = root / "logs" / "skrl" / "Pendulum-v1", "2026-11-30_10-00-00_ppo_torch"
    cfg = copy.deepcopy(_SKRL_CFG)
    cfg["agent"]["experiment"].update(directory=str(logs), experiment_name=name)
    env = wrap_env(gym.make_vec("Pendulum-v1", num_envs=2, vectorization_mode="sync"), wrapper="gymnasium")
    runner = Runner(env, cfg)
    (logs / name / "params").mkdir(parents=True)
    (logs / name / "params" / "agent.yaml").write_text(yaml.safe_dump(cfg))
    runner.trainer.train()
    return Seed("skrl", logs / name, logs / name / "checkpoints" / "agent_32.pt", env_id="Pendulum-v1")


def _rsl_rl(root: Path) -> tuple[Seed, Seed]:
    import pickle

    import torch
    import yaml
    from helpers import GymVecEnv, rsl_rl_train_cfg
    from rsl_rl.runners import OnPolicyRunner

    cfg = rsl_rl_train_cfg(None)
    cfg["num_steps_per_env"] = 8
    env = GymVecEnv("Pendulum-v1", 2, seed=cfg["seed"])
    run = root / "logs" / "rsl_rl" / "pendulum" / "2026-11-30_10-00-00"
    (run / "params").mkdir(parents=True)
    (run / "params" / "agent.yaml").write_text(yaml.dump(cfg, sort_keys=False))
    (run / "params" / "env.yaml").write_text(yaml.dump(env.cfg, sort_keys=False))
    torch.manual_seed(cfg["seed"])
    runner = OnPolicyRunner(env, cfg, log_dir=None, device="cpu")
    runner.learn(1)
    runner.save(str(run / "model_1.pt"))
    env.envs.close()
    genesis = root / "logs" / "pendulum-walking"  # Genesis' examples: logs/{exp}/model_N.pt beside cfgs.pkl
    genesis.mkdir()
    shutil.copy(run / "model_1.pt", genesis / "model_1.pt")
    env_cfg = {"env_id": "Pendulum-v1", "num_actions": 1, "clip_actions": 100.0, "episode_length_s": 20.0}
    train = {**cfg, "runner": {"experiment_name": "pendulum-walking", "max_iterations": 1}}
    (genesis / "cfgs.pkl").write_bytes(
        pickle.dumps([env_cfg, {"num_obs": 3}, {"reward_scales": {}}, {}, train])
    )
    return Seed("rsl_rl", run, run / "model_1.pt", env_id="Pendulum-v1"), Seed(
        "cfgs", genesis, genesis / "cfgs.pkl", env_id="Pendulum-v1"
    )


def build_seeds(root: Path) -> dict[str, Seed]:
    """One real artifact per format under ``root`` (a few seconds of training in all, one thread)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        seeds = [*_cleanrl(root), *_sb3(root), _skrl(root), *_rsl_rl(root)]
    finally:
        torch.set_num_threads(threads)
    return {seed.format: seed for seed in seeds}


# ---------------------------------------------------------------------------------------------- mutators
Mutator = Callable[[bytes, random.Random], bytes]


def flip(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        out[rng.randrange(len(out))] ^= rng.randint(1, 255)
    return bytes(out)


def truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(len(data))]


def splice(data: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(data))
    if rng.random() < 0.5:
        return data[:at] + rng.randbytes(rng.randint(1, 16)) + data[at:]
    return data[:at] + data[at + rng.randint(1, 64) :]


def repeat(data: bytes, rng: random.Random) -> bytes:
    at, n = rng.randrange(len(data)), rng.randint(1, 256)
    return data[:at] + data[at : at + n] * rng.randint(2, 8) + data[at:]


BYTES: tuple[Mutator, ...] = (flip, truncate, splice, repeat)


def _entries(data: bytes) -> list[tuple[zipfile.ZipInfo, bytes]]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return [(info, zf.read(info)) for info in zf.infolist()]


def _zip(entries: list[tuple[zipfile.ZipInfo | str, bytes]], compress: int | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf, warnings_off():
        for info, content in entries:
            if compress is not None:
                name = info.filename if isinstance(info, zipfile.ZipInfo) else info
                info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
                info.compress_type = compress
            zf.writestr(info, content)
    return buf.getvalue()


@contextlib.contextmanager
def warnings_off():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate names it is asked to write
        yield


def _pick(entries, rng: random.Random, suffix: str | None = None) -> int:
    matching = [i for i, (info, _) in enumerate(entries) if suffix is None or info.filename.endswith(suffix)]
    return rng.choice(matching or list(range(len(entries))))


def zip_entry_content(data: bytes, rng: random.Random, suffix: str | None = None) -> bytes:
    """One entry's content mutated and re-zipped: the CRCs are valid, the content is not."""
    entries = _entries(data)
    i = _pick(entries, rng, suffix)
    info, content = entries[i]
    entries[i] = (info, rng.choice(BYTES)(content, rng) if content else rng.randbytes(4))
    return _zip(entries)


def zip_structure(data: bytes, rng: random.Random) -> bytes:
    """Drop, duplicate, rename or reorder entries, or deflate them all."""
    entries = _entries(data)
    i = rng.randrange(len(entries))
    info, content = entries[i]
    how = rng.randrange(5)
    if how == 0:
        del entries[i]
    elif how == 1:
        entries.insert(rng.randrange(len(entries) + 1), (info, content))
    elif how == 2:
        renamed = rng.choice(
            [
                info.filename.upper(),
                "other/" + info.filename,
                info.filename.split("/", 1)[-1],
                info.filename + "x",
            ]
        )
        entries[i] = (renamed, content)
    elif how == 3:
        rng.shuffle(entries)
    else:
        return _zip(entries, compress=zipfile.ZIP_DEFLATED)
    return _zip(entries)


def zip_framing(data: bytes, rng: random.Random) -> bytes:
    """Bytes before or after the archive, or a flip in its central directory."""
    how = rng.randrange(3)
    if how == 0:
        return rng.randbytes(rng.randint(1, 64)) + data
    if how == 1:
        return data + rng.randbytes(rng.randint(1, 4096))
    end = data.rfind(b"PK\x01\x02")
    tail = bytearray(data)
    tail[rng.randrange(max(end, 0), len(data))] ^= rng.randint(1, 255)
    return bytes(tail)


_BOMBS: dict[str, bytes] = {}
BOMB_BYTES = 512 << 20


def zip_bomb(data: bytes, rng: random.Random, suffix: str) -> bytes:
    """The entry ending in ``suffix`` replaced by 512 MiB of deflated zeros (0.5 MiB on disk).

    Compressing takes a second or two, so each bomb entry is built once per process and the other
    entries are appended to a copy of it.
    """
    entries = _entries(data)
    target = entries[_pick(entries, rng, suffix)][0].filename
    if target not in _BOMBS:
        buf = io.BytesIO()
        with (
            zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf,
            zf.open(target, "w", force_zip64=True) as fh,
        ):
            chunk = b"\0" * (1 << 20)
            for _ in range(BOMB_BYTES >> 20):
                fh.write(chunk)
        _BOMBS[target] = buf.getvalue()
    buf = io.BytesIO(_BOMBS[target])
    with zipfile.ZipFile(buf, "a") as zf:
        for info, content in entries:
            if info.filename != target:
                zf.writestr(info, content)
    return buf.getvalue()


def pickle_opcodes(data: bytes, rng: random.Random) -> bytes:
    """Change one opcode, or one integer argument (a shape, a numel, a memo index), by a small amount."""
    import pickletools

    try:
        ops = [(op, arg, pos) for op, arg, pos in pickletools.genops(data)]
    except Exception:  # noqa: BLE001 - a stream genops cannot read is mutated byte-wise
        return flip(data, rng)
    op, arg, pos = rng.choice(ops)
    out = bytearray(data)
    if isinstance(arg, int) and op.name in ("BININT1", "BININT2", "BININT") and rng.random() < 0.7:
        width = {"BININT1": 1, "BININT2": 2, "BININT": 4}[op.name]
        value = (arg + rng.choice([-2, -1, 1, 2, 7, 1000])) % (1 << (8 * width))
        out[pos + 1 : pos + 1 + width] = value.to_bytes(width, "little")
    else:
        out[pos] = rng.randrange(256)
    return bytes(out)


def pickle_values(data: bytes, rng: random.Random) -> bytes:
    """A value changed but not the structure: bits of a float, bytes of a byte string (array data) or a string.

    Most such mutants still load; they keep the "ok" side of the oracle busy.
    """
    import pickletools

    try:
        ops = [(op.name, arg, pos) for op, arg, pos in pickletools.genops(data)]
    except Exception:  # noqa: BLE001
        return flip(data, rng)
    header = {"BINFLOAT": 1, "SHORT_BINBYTES": 2, "BINBYTES": 5, "SHORT_BINUNICODE": 2, "BINUNICODE": 5}
    valued = [(name, arg, pos) for name, arg, pos in ops if name in header and (name == "BINFLOAT" or arg)]
    if not valued:
        return flip(data, rng)
    name, arg, pos = rng.choice(valued)
    out = bytearray(data)
    width = 8 if name == "BINFLOAT" else len(arg.encode() if isinstance(arg, str) else arg)
    at = pos + header[name] + rng.randrange(width)
    out[at] = rng.randrange(0x20, 0x7F) if "UNICODE" in name else out[at] ^ rng.randint(1, 255)
    return bytes(out)


def torch_pickle(data: bytes, rng: random.Random) -> bytes:
    """``data.pkl`` of a torch zip mutated opcode-wise, re-zipped with valid CRCs."""
    entries = _entries(data)
    i = _pick(entries, rng, "data.pkl")
    entries[i] = (entries[i][0], rng.choice([pickle_opcodes, pickle_values])(entries[i][1], rng))
    return _zip(entries)


def torch_storage(data: bytes, rng: random.Random) -> bytes:
    """A tensor storage record made shorter or longer than its tensors need (valid CRC)."""
    entries = _entries(data)
    i = _pick(entries, rng, rng.choice(["data/0", "data/1", "data/2"]))
    info, content = entries[i]
    entries[i] = (
        info,
        content[: rng.randrange(len(content) or 1)] if rng.random() < 0.5 else content + b"\0" * 4,
    )
    return _zip(entries)


def in_place_entry_flip(data: bytes, rng: random.Random, suffix: str | None = None) -> bytes:
    """A byte flipped inside one entry's stored bytes: only the CRC-32 can tell."""
    import struct

    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        infos = [
            i for i in zf.infolist() if i.compress_size and (suffix is None or i.filename.endswith(suffix))
        ]
    if not infos:
        return flip(data, rng)
    info = rng.choice(infos)
    name_len, extra_len = struct.unpack_from("<HH", data, info.header_offset + 26)
    start = info.header_offset + 30 + name_len + extra_len
    out = bytearray(data)
    out[start + rng.randrange(info.compress_size)] ^= rng.randint(1, 255)
    return bytes(out)


def with_payload(data: bytes, rng: random.Random, payload: Payload, fmt: str) -> bytes:
    """The format's pickle replaced by a hostile one (a torch zip's ``data.pkl``, an SB3 value, the file)."""
    import base64

    if fmt in ("cleanrl", "skrl", "rsl_rl"):
        entries = _entries(data)
        i = _pick(entries, rng, "data.pkl")
        entries[i] = (entries[i][0], payload.data)
        return _zip(entries)
    if fmt == "sb3":
        entries = _entries(data)
        i = _pick(entries, rng, "data")
        doc = json.loads(entries[i][1])
        key = rng.choice(["observation_space", "action_space", "policy_kwargs", "policy_class"])
        doc[key] = {":type:": "<class 'x'>", ":serialized:": base64.b64encode(payload.data).decode()}
        entries[i] = (entries[i][0], json.dumps(doc).encode())
        return _zip(entries)
    return payload.data  # cleanrl-legacy, vecnormalize, cfgs: the file is the pickle


def sb3_json(data: bytes, rng: random.Random) -> bytes:
    """SB3's ``data`` JSON with a key deleted, a value retyped, or a serialized value damaged (valid CRC)."""
    entries = _entries(data)
    i = _pick(entries, rng, "data")
    doc = json.loads(entries[i][1])
    key = rng.choice(sorted(doc))
    how = rng.randrange(4)
    if how == 0:
        del doc[key]
    elif how == 1:
        doc[key] = rng.choice([None, "x", 10**30, -1, [], {}, [[[[[]]]]], {":serialized:": "!!"}])
    elif isinstance(doc[key], dict) and ":serialized:" in doc[key]:
        raw = doc[key][":serialized:"]
        at = rng.randrange(len(raw))
        doc[key][":serialized:"] = raw[:at] + rng.choice("ABCDEFGHIJ+/=") + raw[at + 1 :]
    else:
        doc[key] = json.loads(json.dumps(doc[key])) if how == 2 else "[" * 100_000 + "]" * 100_000
    entries[i] = (entries[i][0], json.dumps(doc).encode())
    return _zip(entries)


def sb3_policy(data: bytes, rng: random.Random) -> bytes:
    """SB3's inner ``policy.pth`` (a torch zip) mutated like a torch file, the outer zip re-written."""
    entries = _entries(data)
    i = _pick(entries, rng, "policy.pth")
    entries[i] = (
        entries[i][0],
        rng.choice([torch_pickle, torch_storage, in_place_entry_flip])(entries[i][1], rng),
    )
    return _zip(entries, compress=zipfile.ZIP_DEFLATED)


def mutators(fmt: str, canary_dir: Path) -> list[tuple[str, Callable[[bytes, random.Random], bytes]]]:
    """``(name, mutate)`` for one format: its generic byte mutations, its structural ones, every payload."""
    found: list[tuple[str, Callable[[bytes, random.Random], bytes]]] = [(m.__name__, m) for m in BYTES]
    if fmt in ("cleanrl", "skrl", "rsl_rl", "sb3"):
        found += [
            ("zip_entry_content", zip_entry_content),
            ("zip_structure", zip_structure),
            ("zip_framing", zip_framing),
            ("in_place_entry_flip", in_place_entry_flip),
        ]
    if fmt in ("cleanrl", "skrl", "rsl_rl"):
        found += [
            ("torch_pickle", torch_pickle),
            ("torch_storage", torch_storage),
            ("zip_bomb", lambda d, r: zip_bomb(d, r, "data.pkl")),
        ]
    if fmt == "sb3":
        found += [
            ("sb3_json", sb3_json),
            ("sb3_policy", sb3_policy),
            ("zip_bomb", lambda d, r: zip_bomb(d, r, "data")),
        ]
    if fmt in ("cleanrl-legacy", "vecnormalize", "cfgs"):
        found += [("pickle_opcodes", pickle_opcodes)] * 2 + [("pickle_values", pickle_values)] * 3
    for payload in payloads(canary_dir):
        found.append((f"payload:{payload.name}", lambda d, r, p=payload: with_payload(d, r, p, fmt)))
    return found


# ---------------------------------------------------------------------------------------------- oracle
@dataclass
class Outcome:
    """What one case found; ``wrong_ok``, ``internal``, ``stray``, a lost run and ``hang`` are failures,
    ``false_error`` is not."""

    format: str
    case: int
    mutation: str
    status: str = ""  # ok | warning | error | no-run (discovery found no run: the run was lost)
    reason: str = ""
    loads: bool | None = None  # the real loaders' verdict (None: not asked)
    wrong_ok: str | None = None
    internal: str | None = None
    stray: str | None = None  # what reached the terminal besides the JSON and a one-line error
    hang: bool = False
    seconds: float = 0.0  # zoo check's time on the mutant (not the mutation's, nor the oracle's)

    @property
    def failed(self) -> bool:
        return bool(self.wrong_ok or self.internal or self.stray or self.hang or self.status == "no-run")


class _Timeout(Exception):
    pass


@contextlib.contextmanager
def time_bound(seconds: float):
    """Raise :class:`_Timeout` in the main thread after ``seconds`` (SIGALRM)."""

    def alarm(_signum, _frame):
        raise _Timeout

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _zips_are_intact(path: Path) -> str | None:
    """``testzip()`` of the file and, for SB3, of its inner ``policy.pth``; None when every CRC matches."""
    try:
        with zipfile.ZipFile(path) as zf:
            bad = zf.testzip()
            if bad:
                return f"testzip: {bad}"
            if "policy.pth" in zf.namelist():
                with zipfile.ZipFile(io.BytesIO(zf.read("policy.pth"))) as inner:
                    bad = inner.testzip()
                    if bad:
                        return f"testzip: policy.pth/{bad}"
    except Exception as exc:  # noqa: BLE001 - whatever zipfile raises, the archive does not read
        return f"zipfile: {type(exc).__name__}: {exc}"
    return None


def _real_loaders(seed: Seed, registry) -> str | None:
    """Why the real loaders refuse the run (None when every one of them takes it)."""
    import warnings

    import numpy as np
    import torch

    import zoo
    from zoo.errors import RolloutError

    warnings.filterwarnings("ignore", message="Detected pickle protocol")  # torch's, for mutated protocols

    if (
        seed.target.suffix in (".zip", ".pt", ".cleanrl_model")
        and seed.target.read_bytes()[:4] == b"PK\x03\x04"
    ):
        broken = _zips_are_intact(seed.target)
        if broken:
            return broken
    if seed.format in ("cleanrl", "cleanrl-legacy", "skrl", "rsl_rl"):
        try:
            torch.load(seed.target, map_location="cpu", weights_only=True)
        except Exception as exc:  # noqa: BLE001 - the oracle's own verdict
            return f"torch.load: {type(exc).__name__}: {str(exc)[:120]}"
    policy = zoo.load_policy(seed.run, env_id=seed.env_id, registry=registry)
    obs = policy.observation_space.sample()
    batch = (
        {k: np.asarray(v)[None] for k, v in obs.items()} if isinstance(obs, dict) else np.asarray(obs)[None]
    )
    # a file that loads and then refuses to act from NaN values is the rollout's honest verdict, not a failed load
    with contextlib.suppress(RolloutError):
        policy.act(batch, deterministic=True)
    return None


def check_json(run: Path) -> tuple[list[dict] | None, str, list[str]]:
    """``zoo check RUN --json --no-cache`` in-process: ``(parsed stdout or None, stderr, what else would have
    reached the terminal)``: warnings a user would see, exceptions Python could only print (unraisable)."""
    from click.testing import CliRunner

    from zoo.cli import cli

    printed: list[str] = []
    hook = sys.unraisablehook
    sys.unraisablehook = lambda u: printed.append(f"unraisable {u.exc_type.__name__}: {u.exc_value}")
    try:
        with warnings.catch_warnings(record=True) as shown:
            warnings.simplefilter("always")
            result = CliRunner().invoke(
                cli, ["check", str(run), "--json", "--no-cache"], catch_exceptions=False
            )
            gc.collect()  # what numpy frees late prints now, not in the next case
    finally:
        sys.unraisablehook = hook
    printed += [
        f"{w.category.__name__}: {w.message}" for w in shown if not issubclass(w.category, _HIDDEN_WARNINGS)
    ]
    try:
        parsed = json.loads(result.stdout)
    except ValueError:
        parsed = None
        printed.append(f"stdout is not JSON: {result.stdout[:200]!r}")
    return parsed, result.stderr, printed


def run_case(seed: Seed, number: int, canary_dir: Path, registry=None) -> Outcome:
    """Mutate ``seed`` by case ``number``, check it, load it, restore it; never raises."""
    from zoo.errors import ZooError
    from zoo.registry import load_registry

    registry = registry or load_registry()

    rng = random.Random(f"{seed.format}:{number}")
    options = mutators(seed.format, canary_dir)
    name, mutate = options[number % len(options)] if number < len(options) else rng.choice(options)
    outcome = Outcome(seed.format, number, name)
    start = time.perf_counter()
    try:
        seed.target.write_bytes(mutate(seed.original, rng))
        start = time.perf_counter()
        with time_bound(CASE_SECONDS):
            reports, stderr, printed = check_json(seed.run)
            lines = stderr.splitlines()
            if "internal error" in stderr:
                outcome.internal = stderr.strip()
            stray = [line for line in lines if not line.startswith(("error: ", "hint: "))] + printed
            if stray or len(lines) > 2:
                outcome.stray = "; ".join(stray or lines)[:300]
            if reports:
                report = next(
                    r
                    for r in reports
                    if r["run"]["model_file"] in (str(seed.target), None) or r["run"]["path"] == str(seed.run)
                )
                outcome.status, outcome.reason = report["status"], report["reason"]
                if report["status"] == "error" and (not report["hint"] or "\n" in report["reason"]):
                    outcome.internal = f"not a one-line error with a hint: {report['reason']!r}"
                if "internal error" in report["reason"]:
                    outcome.internal = report["reason"]
            elif reports == []:
                outcome.status, outcome.reason = "no-run", stderr.strip()
            outcome.seconds = time.perf_counter() - start
            try:
                problem = _real_loaders(seed, registry)
            except ZooError as exc:
                problem = exc.message
            outcome.loads = problem is None
            if outcome.status == "ok" and problem:
                outcome.wrong_ok = problem
    except _Timeout:
        outcome.hang = True
    except Exception as exc:  # noqa: BLE001 - an exception escaping zoo is the finding
        outcome.internal = f"{type(exc).__name__}: {exc}"[:300] + "\n" + traceback.format_exc(limit=-3)
    finally:
        outcome.seconds = outcome.seconds or time.perf_counter() - start
        seed.target.write_bytes(seed.original)
    return outcome


def describe(outcome: Outcome) -> str:
    """What went wrong in a failed case, in one line."""
    if outcome.wrong_ok:
        return f"wrong ok ({outcome.wrong_ok})"
    if outcome.status == "no-run":
        return f"the run was lost: {outcome.reason}"
    return outcome.internal or (outcome.stray and f"stray output: {outcome.stray}") or "hang"


# ---------------------------------------------------------------------------------------------- summary
@dataclass
class Summary:
    outcomes: list[Outcome] = field(default_factory=list)
    canaries: list[str] = field(default_factory=list)

    def rows(self) -> list[dict]:
        rows = []
        for fmt in FORMATS:
            mine = [o for o in self.outcomes if o.format == fmt]
            if not mine:
                continue
            status = Counter(o.status for o in mine)
            rows.append(
                {
                    "format": fmt,
                    "cases": len(mine),
                    "ok": status["ok"],
                    "warning": status["warning"],
                    "clean errors": status["error"],
                    "lost runs": status["no-run"],
                    "wrong ok": sum(bool(o.wrong_ok) for o in mine),
                    "internal errors": sum(bool(o.internal) for o in mine),
                    "stray output": sum(bool(o.stray) for o in mine),
                    "hangs": sum(o.hang for o in mine),
                    "false errors": sum(o.status == "error" and bool(o.loads) for o in mine),
                    "max s": round(max(o.seconds for o in mine), 2),
                }
            )
        return rows

    def table(self) -> str:
        rows = self.rows()
        if not rows:
            return "no cases"
        cols = list(rows[0])
        lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]
        total = {c: sum(r[c] for r in rows) for c in cols[1:] if c != "max s"}
        lines.append(
            "| all | " + " | ".join(str(total.get(c, max(r["max s"] for r in rows))) for c in cols[1:]) + " |"
        )
        lines.append(f"canaries: {len(self.canaries)}")
        return "\n".join(lines)

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.failed]


def fuzz(seeds: dict[str, Seed], cases: int, canary_dir: Path, formats=FORMATS, on_case=None) -> Summary:
    """``cases`` mutants of each format's seed; every payload kind comes first, then seeded random ones."""
    from zoo.registry import load_registry

    summary, registry = Summary(), load_registry()
    canary_dir.mkdir(parents=True, exist_ok=True)
    for fmt in formats:
        for number in range(cases):
            outcome = run_case(seeds[fmt], number, canary_dir, registry)
            summary.outcomes.append(outcome)
            if on_case:
                on_case(outcome)
    summary.canaries = sorted(p.name for p in canary_dir.iterdir())
    return summary
