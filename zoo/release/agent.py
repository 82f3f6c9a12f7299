"""``agent.pt``: the policy as the Hugging Face Open RL Leaderboard loads and calls it.

The leaderboard's loop is ``agent = torch.jit.load("agent.pt")`` and, each step,
``action = agent(torch.tensor(np.array([obs]))).numpy()[0]``: a batch of raw observations in the dtype the
env gives (float32, float64, uint8 frames), env actions out (int64 for Discrete, float32 for Box). So the
module casts its input to float32 itself, runs the export module (normalizer, frame scaling and action
head baked in) and casts the actions to the env's dtype. Atari runs there as ``*NoFrameskip-v4`` behind the
standard preprocessing, whose frame stack is channel-first ``(4, 84, 84)`` uint8: a policy zoo evaluates on
channel-last stacks (SB3's ``VecFrameStack``) gets that transpose in front. A recurrent policy keeps its
state inside (:class:`~zoo.exporter.modules.StatefulRecurrent`): ``reset()`` before an episode.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

from zoo.policy import ExportSpec

AGENT_FILE = "agent.pt"
#: The frame stack the leaderboard's Atari preprocessing gives: 4 grayscale 84x84 frames, channel first.
ATARI_STACK = (4, 84, 84)


def is_atari(env_id: str) -> bool:
    return env_id.split(":")[-1].split("/")[-1].endswith("NoFrameskip-v4")


def input_permutation(env_id: str, obs_shape: tuple[int, ...]) -> list[int] | None:
    """How to turn the leaderboard's input into the policy's: channel-first Atari stacks to channel-last."""
    if is_atari(env_id) and tuple(obs_shape) == ATARI_STACK[1:] + ATARI_STACK[:1]:
        return [0, 2, 3, 1]
    return None


def action_dtype(action_space) -> torch.dtype:
    from gymnasium import spaces

    return torch.float32 if isinstance(action_space, spaces.Box) else torch.int64


class LeaderboardAgent(nn.Module):
    """``forward(raw_obs[, h, c])``: any input dtype, the env's action dtype out."""

    def __init__(self, core: nn.Module, permutation: list[int] | None, out_dtype: torch.dtype):
        super().__init__()
        self.core = core
        self.permutation = permutation
        self.out_dtype = out_dtype

    def forward(self, x: torch.Tensor, *state: torch.Tensor):
        x = x.to(torch.float32)
        if self.permutation is not None:
            x = x.permute(*self.permutation)
        out = self.core(x, *state)
        if isinstance(out, tuple):
            return (out[0].to(self.out_dtype), *out[1:])
        return out.to(self.out_dtype)


class NoGrad(nn.Module):
    """The traced agent run without autograd whatever the caller's grad mode: the leaderboard calls it bare and
    takes ``.numpy()`` of its actions, which a result that requires grad refuses (every Gaussian policy's would),
    and some kernels (an LSTM's) take another path under autograd."""

    def __init__(self, agent: nn.Module):
        super().__init__()
        self.agent = agent

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return self.agent(x)


def write_agent(spec: ExportSpec, env_id: str, action_space, example: torch.Tensor, path: Path) -> None:
    """Trace the leaderboard agent of ``spec`` on ``example`` (the export module's float32 input) to ``path``."""
    from zoo.exporter.modules import StatefulRecurrent
    from zoo.exporter.writers import _core_inputs, quiet

    permutation = input_permutation(env_id, spec.obs_shape)
    agent = LeaderboardAgent(spec.module, permutation, action_dtype(action_space))
    inputs = _core_inputs(spec, example)
    if permutation is not None:  # trace on the leaderboard's layout
        inverse = list(np.argsort(permutation))
        inputs = (inputs[0].permute(*inverse), *inputs[1:])
    with quiet(), torch.no_grad():
        module = torch.jit.trace(agent, inputs, check_trace=False)
        if spec.recurrent is not None:
            r = spec.recurrent
            module = torch.jit.script(StatefulRecurrent(module, r.num_layers, r.hidden_dim))
        else:
            module = torch.jit.script(NoGrad(module))
        torch.jit.save(module, str(path))
    _fix_serialization_id(path)


def _fix_serialization_id(path: Path) -> None:
    """Replace the random id torch writes into every archive (``.data/serialization_id``) with one derived from
    the rest of the file: the same policy then gives the same agent.pt, byte for byte. The record is stored
    uncompressed, so only its bytes and its CRC-32 (in the local and the central header) change."""
    import hashlib
    import struct
    import zipfile
    import zlib

    with zipfile.ZipFile(path) as archive:
        info = next((i for i in archive.infolist() if i.filename.endswith(".data/serialization_id")), None)
        if info is None or info.compress_type != zipfile.ZIP_STORED:
            return
        digest = hashlib.sha256()
        for other in archive.infolist():
            if other is not info:
                digest.update(other.filename.encode() + archive.read(other))
    new = str(int(digest.hexdigest(), 16))[: info.file_size].zfill(info.file_size).encode()
    crc = struct.pack("<I", zlib.crc32(new))
    blob = bytearray(path.read_bytes())
    at = info.header_offset
    name_len, extra_len = struct.unpack("<HH", blob[at + 26 : at + 30])
    blob[at + 14 : at + 18] = crc
    data = at + 30 + name_len + extra_len
    blob[data : data + info.file_size] = new
    central = blob.find(b"PK\x01\x02", data)
    while central >= 0:
        length = struct.unpack("<H", blob[central + 28 : central + 30])[0]
        if blob[central + 46 : central + 46 + length] == info.filename.encode():
            blob[central + 16 : central + 20] = crc
            break
        central = blob.find(b"PK\x01\x02", central + 4)
    path.write_bytes(bytes(blob))


class AgentRunner:
    """``agent.pt`` called as the leaderboard calls it, behind the parity check's runner interface: the
    check's float32 observations are given back in the env's dtype and layout, and the actions' dtype must be
    the env's (a wrong one fails every value)."""

    def __init__(
        self,
        path: Path,
        observation_space,
        env_id: str,
        obs_shape: tuple[int, ...],
        action_space,
        recurrent: bool,
    ):
        from zoo.exporter.runtime import TorchScriptRunner

        self.runner = TorchScriptRunner(path, recurrent)
        self.dtype = getattr(observation_space, "dtype", None) or np.float32
        self.permutation = input_permutation(env_id, obs_shape)
        self.expected = action_dtype(action_space)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        if self.permutation is not None:
            x = x.transpose(*np.argsort(self.permutation))
        try:  # bare, as the leaderboard calls it: the caller's grad mode, .numpy() of the result
            actions = self.runner.module(torch.tensor(np.ascontiguousarray(x.astype(self.dtype))))
            out = actions.numpy()
        except RuntimeError:
            return np.full(len(x), np.nan)  # fails every value, with its shape
        if actions.dtype != self.expected:
            return np.full(out.shape, np.nan)
        return out

    def reset(self, done: np.ndarray) -> None:
        self.runner.reset(done)
