"""``--capture-video``: the fix a missing extra names, quiet renderers, and where the videos went.

Real CartPole rollouts through the evaluator. The tests that encode real mp4 files need the video extra
(moviepy, imageio-ffmpeg, pygame) and skip without it; the recorder's bookkeeping is also checked without
it, with CartPole's frames and the encoder stubbed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import types
import warnings
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pytest
from helpers import make_run, zoo

from zoo.envs import EnvSpec, VideoLog, list_videos
from zoo.evaluator import evaluate

HINT = "pip install 'rl-zoo-hub[video]'"
HAS_VIDEO_EXTRA = all(find_spec(m) is not None for m in ("moviepy", "imageio_ffmpeg", "pygame"))
needs_video_extra = pytest.mark.skipif(not HAS_VIDEO_EXTRA, reason="needs the video extra: " + HINT)
#: What SDL, ALSA, pygame, moviepy and gymnasium print when left to themselves on a headless machine.
NOISE = ("XDG_RUNTIME_DIR", "ALSA", "SDL", "pygame", "MoviePy", "moviepy", "Overwriting existing videos")
RENDER_VARS = ("SDL_VIDEODRIVER", "SDL_AUDIODRIVER", "XDG_RUNTIME_DIR", "DISPLAY", "WAYLAND_DISPLAY")


class _Balance:
    """Pushes the cart towards the side the pole leans to: CartPole episodes of a few dozen steps."""

    is_recurrent = False

    def act(self, obs, state=None, deterministic=True):
        return (obs[:, 2] > 0).astype(np.int64), state

    def reset(self, done_mask):
        pass


@pytest.fixture(autouse=True)
def _render_env_restored(monkeypatch):
    """The recorder sets SDL's drivers with ``setdefault``: leave this worker's environment as it was."""
    for name in ("SDL_VIDEODRIVER", "SDL_AUDIODRIVER"):
        monkeypatch.delenv(name, raising=False)


def _rollout(video_dir: Path, log: VideoLog | None, episodes: int = 3, num_envs: int = 1):
    spec = EnvSpec("CartPole-v1", video_dir=str(video_dir), video_log=log)
    return evaluate(
        _Balance(),
        spec,
        episodes=episodes,
        num_envs=num_envs,
        seed=0,
        deterministic=True,
        checkpoint="balance",
        exp_name=None,
        framework=None,
        device="cpu",
    )


def _fake_moviepy(monkeypatch, fail_on_write: int | None = None) -> list[int]:
    """A moviepy whose clip writes its frame count as the file; returns the frame counts written."""
    written: list[int] = []

    class ImageSequenceClip:
        def __init__(self, frames, fps):
            self.frames = frames

        def write_videofile(self, path, logger=None):
            if fail_on_write is not None and len(written) + 1 == fail_on_write:
                raise OSError("ffmpeg pipe broke")
            Path(path).write_text(str(len(self.frames)))
            written.append(len(self.frames))

    names = ("moviepy", "moviepy.video", "moviepy.video.io", "moviepy.video.io.ImageSequenceClip")
    for name in names:
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    sys.modules["moviepy.video.io.ImageSequenceClip"].ImageSequenceClip = ImageSequenceClip
    return written


def _stub_frames(monkeypatch):
    """CartPole's frames without pygame: a small black image per render."""
    from gymnasium.envs.classic_control.cartpole import CartPoleEnv

    monkeypatch.setattr(CartPoleEnv, "render", lambda self: np.zeros((8, 8, 3), np.uint8))


# ----------------------------------------------------------------------------- 1: the fix a missing extra names
def test_missing_moviepy_names_the_video_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "moviepy", None)  # `import moviepy` raises ImportError
    log = VideoLog()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = _rollout(tmp_path / "videos", log)
    assert len(result.episodes) == 3  # the eval itself is untouched
    assert len(log.failures) == 1 and log.failures[0].startswith("video capture disabled: moviepy")
    assert HINT in log.failures[0] and "gymnasium" not in log.failures[0]
    assert [str(w.message) for w in caught if "video" in str(w.message)] == log.failures  # the old channel
    assert log.written == [] and not (tmp_path / "videos").exists()  # no empty folder left behind


def test_missing_pygame_names_the_video_extra(tmp_path, monkeypatch):
    _fake_moviepy(monkeypatch)
    monkeypatch.setitem(sys.modules, "pygame", None)  # CartPole's renderer imports pygame at the first frame
    log = VideoLog()
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        _rollout(tmp_path / "videos", log)
    assert log.failures == [
        f"video capture stopped: pygame is not installed (install the video extra: {HINT})"
    ]
    assert log.written == []


def test_eval_cli_hint_names_the_video_extra(tmp_path, monkeypatch):
    """What the review saw: the CLI prints the hint whole (rich markup would drop "[video]")."""
    monkeypatch.setitem(sys.modules, "moviepy", None)
    run = make_run(tmp_path, "CartPole-v1", "dqn")
    result = zoo("eval", run, "-n", "2", "--num-envs", "1", "--capture-video", "-q")
    assert result.exit_code == 0, result.stderr
    assert HINT in result.stderr, result.stderr


# ----------------------------------------------------------------------------- 2: quiet renderers
def _cli_eval(run: Path, cwd: Path, **env_vars: str) -> subprocess.CompletedProcess:
    """``zoo eval --capture-video -q`` in a subprocess: what the C libraries print on fd 2 is captured too."""
    env = {k: v for k, v in os.environ.items() if k not in RENDER_VARS and k != "MUJOCO_GL"}
    env.update(env_vars)
    cmd = [
        sys.executable,
        "-m",
        "zoo",
        "eval",
        str(run),
        "-n",
        "2",
        "--num-envs",
        "1",
        "--capture-video",
        "-q",
    ]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@needs_video_extra
def test_quiet_eval_prints_no_renderer_noise(tmp_path):
    run = make_run(tmp_path, "CartPole-v1", "dqn")
    videos = tmp_path / "videos" / f"{run.name}-eval"
    for attempt in ("first", "again, over the first one's videos"):
        result = _cli_eval(run, tmp_path)
        assert result.returncode == 0, result.stderr
        noise = [line for line in result.stderr.splitlines() if any(word in line for word in NOISE)]
        assert noise == [], f"{attempt}: {result.stderr}"
        assert [p.name for p in list_videos(videos)] == ["rl-video-episode-0.mp4", "rl-video-episode-1.mp4"]


@needs_video_extra
def test_a_real_render_failure_still_shows_with_quiet(tmp_path):
    """The drivers are defaults, not a muzzle: a display driver the user asked for and SDL lacks is reported."""
    run = make_run(tmp_path, "CartPole-v1", "dqn")
    result = _cli_eval(run, tmp_path, SDL_VIDEODRIVER="no-such-driver")
    assert result.returncode == 0, result.stderr
    assert "warning: video capture stopped: no-such-driver not available" in result.stderr, result.stderr
    assert list_videos(tmp_path / "videos" / f"{run.name}-eval") == []


# ----------------------------------------------------------------------------- 3: where the videos went
@needs_video_extra
def test_listing_returns_the_videos_really_written(tmp_path):
    from imageio_ffmpeg import count_frames_and_secs

    folder = tmp_path / "videos"
    log = VideoLog()
    result = _rollout(folder, log, episodes=3)
    on_disk = sorted(folder.glob("*.mp4"))
    assert log.failures == [] and len(on_disk) == 3
    assert log.written == list_videos(folder) == [folder / f"rl-video-episode-{i}.mp4" for i in range(3)]
    assert {p.resolve() for p in list_videos(folder)} == {p.resolve() for p in on_disk}
    for path, episode in zip(log.written, result.episodes, strict=True):
        frames, _ = count_frames_and_secs(str(path))
        assert frames == episode.length + 1, (path, frames, episode.length)  # the reset frame, then the steps


def test_listing_and_log_match_the_recorded_episodes(tmp_path, monkeypatch):
    """Without the extra: real rollouts, stubbed frames and encoder; each file holds one episode's frames."""
    written = _fake_moviepy(monkeypatch)
    _stub_frames(monkeypatch)
    folder = tmp_path / "videos"
    log = VideoLog()
    result = _rollout(folder, log, episodes=12)
    names = [f"rl-video-episode-{i}.mp4" for i in range(12)]
    assert log.written == list_videos(folder) == [folder / n for n in names]  # episode 10 after episode 9
    assert written == [e.length + 1 for e in result.episodes]  # the reset frame, then one per step
    assert [int(p.read_text()) for p in log.written] == written
    assert log.failures == []


def test_listing_since_leaves_out_an_earlier_evals_videos(tmp_path, monkeypatch):
    _fake_moviepy(monkeypatch)
    _stub_frames(monkeypatch)
    folder = tmp_path / "videos"
    _rollout(folder, VideoLog(), episodes=3)
    for path in folder.iterdir():  # the earlier eval ran an hour ago
        os.utime(path, (path.stat().st_atime - 3600, path.stat().st_mtime - 3600))
    import time

    start, log = time.time(), VideoLog()
    _rollout(folder, log, episodes=2)
    assert [p.name for p in list_videos(folder)] == [f"rl-video-episode-{i}.mp4" for i in range(3)]
    assert (
        list_videos(folder, since=start)
        == log.written
        == [folder / f"rl-video-episode-{i}.mp4" for i in range(2)]
    )
    assert list_videos(tmp_path / "nowhere") == []


def test_a_failed_write_is_logged_once_and_the_eval_goes_on(tmp_path, monkeypatch):
    _fake_moviepy(monkeypatch, fail_on_write=2)
    _stub_frames(monkeypatch)
    folder = tmp_path / "videos"
    log = VideoLog()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = _rollout(folder, log, episodes=4)
    assert len(result.episodes) == 4
    assert log.failures == ["video capture stopped: ffmpeg pipe broke"]
    assert [str(w.message) for w in caught if "video" in str(w.message)] == log.failures
    assert log.written == list_videos(folder) == [folder / "rl-video-episode-0.mp4"]
