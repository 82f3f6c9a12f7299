"""What zoo's Genesis tasks share: Genesis initialised once per process, and env 0's video.

Genesis is imported here only when a task is built (``import genesis`` takes seconds and patches the
process), and initialised once: ``gs.init`` can run only once per process, so a second task (or the
user's own ``gs.init``) must agree on the backend. No seed is passed to ``gs.init``: Genesis' kernel
cache is keyed by it, and every new seed would recompile the kernels (about 90 s on a CPU); each task
draws its randomness from its own seeded ``torch.Generator`` instead.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from zoo.errors import UnsupportedError

#: How loud Genesis is (its logging level): "error" keeps stdout and stderr silent, even on a cold compile.
LOG_LEVEL_ENV = "ZOO_GENESIS_LOG"
GENESIS_HINT = "pip install 'rl-zoo-hub[genesis]'"
#: The video camera's resolution and field of view (320x240 renders in ~140 ms on a CPU, with Mesa's EGL).
VIDEO_RES = (320, 240)
VIDEO_FOV = 40
#: Episodes of env 0 written as video, at most (the first ones).
VIDEO_EPISODES = 3


def import_genesis():
    """The ``genesis`` module, imported without leaving its stdout-printing ``sys.excepthook`` behind."""
    for module in ("genesis", "tensordict"):
        if find_spec(module) is None:
            raise UnsupportedError(
                f"Genesis tasks need the genesis extra ({module} is not installed)", hint=GENESIS_HINT
            )
    hook = sys.excepthook
    os.environ.setdefault("PYOPENGL_PLATFORM", "egl")  # headless rendering; osmesa breaks `import genesis`
    # Genesis' kernels print nothing, so their output need not go through a replaced sys.stdout (as under
    # pytest or a notebook), which makes Quadrants log "Graphical python shell detected" on stderr
    os.environ.setdefault("QD_ENABLE_PYBUF", "0")
    try:
        import genesis
    finally:
        sys.excepthook = hook  # Genesis prints tracebacks to stdout; zoo keeps Python's (or the user's) hook
    return genesis


def ensure_init(device: str) -> None:
    """Initialise Genesis for ``device`` (its CPU backend for "cpu", a GPU's otherwise), once per process.

    Refuses, in one line, a Genesis that is already initialised (by an earlier task or by the user) for
    another device or precision: it cannot be re-initialised while its scenes live.
    """
    import torch

    from zoo.tensor_env import same_device

    gs = import_genesis()
    if not gs._initialized:
        backend = gs.cpu if torch.device(device).type == "cpu" else gs.gpu
        gs.init(backend=backend, precision="32", logging_level=os.environ.get(LOG_LEVEL_ENV, "error"))
    if not same_device(gs.device, device):
        raise UnsupportedError(
            f"Genesis is initialised for {gs.device} ({gs.backend}), the task asked for {device}",
            hint="evaluate with --device matching Genesis' backend, in a fresh process",
        )
    if gs.tc_float != torch.float32:
        raise UnsupportedError(
            f"Genesis is initialised with {gs.tc_float} precision; zoo's tasks run in float32",
            hint="initialise Genesis with precision='32', or let zoo initialise it",
        )


@dataclass(frozen=True)
class CfgKeys:
    """What a task's env reads of ``[env_cfg, obs_cfg, reward_cfg, command_cfg, ...]``, checked before
    anything is built: a config without it is refused in one line rather than failing mid-build."""

    task_id: str
    env: tuple[str, ...]
    obs_scales: tuple[str, ...]
    command_ranges: tuple[str, ...]  # each a [low, high] list
    rewards: dict[str, tuple[str, ...]]  # each reward the env defines: the reward_cfg keys it reads

    def check(self, cfgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``cfgs`` when they hold all of it, in shapes the env takes; a one-line refusal otherwise."""
        if len(cfgs) < 4 or not all(isinstance(c, dict) for c in cfgs[:4]):
            raise refuse(self.task_id, "expected [env_cfg, obs_cfg, reward_cfg, command_cfg, ...] dicts")
        missing = self._missing(*cfgs[:4])
        if missing:
            raise refuse(self.task_id, f"the config has no {', '.join(missing[:3])}")
        _env_cfg, _obs_cfg, reward_cfg, command_cfg = cfgs[:4]
        ranges = [
            k
            for k in self.command_ranges
            if not (isinstance(command_cfg[k], list | tuple) and len(command_cfg[k]) == 2)
        ]
        if ranges:
            raise refuse(self.task_id, f"command_cfg[{ranges[0]!r}] is not a [low, high] range")
        if command_cfg.get("num_commands", 3) != 3:
            raise refuse(
                self.task_id, f"num_commands is {command_cfg['num_commands']}; the env's commands are 3"
            )
        unknown = [name for name in reward_cfg["reward_scales"] if name not in self.rewards]
        if unknown:
            raise refuse(
                self.task_id, f"reward_cfg names rewards the example does not define: {', '.join(unknown)}"
            )
        lacking = [
            key for name in reward_cfg["reward_scales"] for key in self.rewards[name] if key not in reward_cfg
        ]
        if lacking:
            raise refuse(self.task_id, f"reward_cfg has no {lacking[0]!r}")
        return cfgs

    def _missing(self, env_cfg: dict, obs_cfg: dict, reward_cfg: dict, command_cfg: dict) -> list[str]:
        scales = obs_cfg.get("obs_scales", {})
        return (
            [f"env_cfg[{k!r}]" for k in self.env if k not in env_cfg]
            + [f"obs_cfg['obs_scales'][{k!r}]" for k in self.obs_scales if k not in scales]
            + [f"command_cfg[{k!r}]" for k in self.command_ranges if k not in command_cfg]
            + ([] if "reward_scales" in reward_cfg else ["reward_cfg['reward_scales']"])
        )


def refuse(task_id: str, why: str) -> UnsupportedError:
    """The one-line refusal of a config that zoo's definition of ``task_id`` cannot honour."""
    return UnsupportedError(
        f"{task_id}: {why}",
        hint="zoo's definition follows Genesis' example env; evaluate this run with its own env "
        "(--env-factory module:function)",
    )


class EpisodeVideo:
    """Env 0's first episodes as ``video_dir/rl-video-episode-{k}.mp4``: one frame per env step.

    The camera is added before the scene is built (:meth:`add_camera`). Each step renders one frame of
    the state the step reached (before the env resets, so an episode ends on its last state) and ends
    the episode's file when env 0 is done; :meth:`close` writes the episode cut short. Failures never
    raise: the first is kept in :attr:`failures` (one line starting "video capture", also warned) and
    nothing is recorded after it. Recording reads env 0's done flag on the host each step; the frame is
    a host copy anyway.
    """

    def __init__(self, video_dir: str, fps: int):
        self.video_dir = Path(video_dir)
        self.fps = fps
        self.written: list[Path] = []
        self.failures: list[str] = []
        self._camera: Any = None
        self._container: Any = None
        self._stream: Any = None

    @property
    def active(self) -> bool:
        return self._camera is not None and not self.failures and len(self.written) < VIDEO_EPISODES

    def add_camera(
        self, scene: Any, pos: tuple[float, ...], lookat: tuple[float, ...], follow: Any = None
    ) -> None:
        """A camera on env 0 (following ``follow`` when given), added to the unbuilt ``scene``."""
        try:
            self._camera = scene.add_camera(res=VIDEO_RES, pos=pos, lookat=lookat, fov=VIDEO_FOV, GUI=False)
            if follow is not None:
                self._camera.follow_entity(follow)
        except Exception as exc:  # noqa: BLE001 - no camera, no video: never a failed evaluation
            self._fail("disabled", exc)

    def frame(self) -> None:
        """Render env 0 now and append the frame to the current episode's file."""
        if not self.active:
            return
        try:
            self._write(self._render())
        except Exception as exc:  # noqa: BLE001 - a render or encoder error must not fail the step
            self._fail("stopped", exc)

    def step_done(self, done0: Any) -> None:
        """After a step: end the episode's file when env 0 (``done0``, its done flag) is done."""
        if self.active and self._container is not None and bool(done0):
            self._finish()

    def close(self) -> None:
        """Write the episode in progress (cut short)."""
        if self._container is not None and not self.failures:
            self._finish()

    def _render(self):
        import numpy as np

        rgb = np.asarray(self._camera.render(rgb=True)[0])
        rgb = rgb[0] if rgb.ndim == 4 else rgb  # a batched scene renders one image per rendered env
        return np.ascontiguousarray(rgb[..., :3], dtype=np.uint8)

    def _path(self) -> Path:
        return self.video_dir / f"rl-video-episode-{len(self.written)}.mp4"

    def _write(self, rgb) -> None:
        import av

        if self._container is None:
            self.video_dir.mkdir(parents=True, exist_ok=True)
            self._container = av.open(str(self._path()), mode="w")
            self._stream = self._container.add_stream("libx264", rate=self.fps)
            self._stream.height, self._stream.width = rgb.shape[:2]
            self._stream.pix_fmt = "yuv420p"
        self._container.mux(self._stream.encode(av.VideoFrame.from_ndarray(rgb, format="rgb24")))

    def _finish(self) -> None:
        path = self._path()
        try:
            self._container.mux(self._stream.encode())  # flush the encoder
            self._container.close()
        except Exception as exc:  # noqa: BLE001
            self._fail("stopped", exc)
            return
        self._container = self._stream = None
        self.written.append(path)

    def _fail(self, stage: str, exc: BaseException) -> None:
        message = f"video capture {stage}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
        self.failures.append(message)
        warnings.warn(message, stacklevel=3)
        if self._container is not None:
            path = self._path()
            with contextlib.suppress(Exception):  # the file is dropped either way
                self._container.close()
            path.unlink(missing_ok=True)
            self._container = self._stream = None
