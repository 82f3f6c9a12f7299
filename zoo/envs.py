"""Evaluation environments: one factory, a few named wrapper presets.

A registry entry names a preset (``env: {wrappers: atari}``); this module turns
``(env_id, preset)`` into the exact wrapper stack the training script used, on
gymnasium 1.x. ``RecordEpisodeStatistics`` always sits directly on the raw env
so that returns are the raw game score, whatever reward shaping or episodic-life
trick the training stack adds on top.
"""

from __future__ import annotations

import dataclasses
import os
import re
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zoo.errors import UsageError, ZooError
from zoo.tensor_env import TensorEnvSpec, extra_for, is_task

if TYPE_CHECKING:
    from zoo.registry import Entry

#: Env families that need an optional extra, recognised by id without importing gymnasium.
MUJOCO_ENVS = (
    "Ant",
    "HalfCheetah",
    "Hopper",
    "Humanoid",
    "HumanoidStandup",
    "InvertedDoublePendulum",
    "InvertedPendulum",
    "Pusher",
    "Reacher",
    "Swimmer",
    "Walker2d",
)
#: EnvPool's Atari ids (``Breakout-v5``); the same test as zoo.envpool_atari.is_envpool_id, kept here so
#: that this check imports neither gymnasium nor ale-py.
_ENVPOOL_ID = re.compile(r"[A-Z][A-Za-z0-9]*-v5")
#: ``run_config``: the wrappers a run's own training config names (rl_zoo3's ``env_wrapper`` and
#: ``frame_stack``), carried in :attr:`EnvSpec.wrappers` and built through :mod:`zoo.env_wrappers`.
PRESETS = ("classic", "normalized_continuous", "atari", "envpool", "run_config")

#: What each preset's wrappers do to observations and actions, which a deployed (exported) policy
#: must reproduce itself; the exporter writes these into the sidecar's ``left_to_caller``.
PRESET_DEPLOYMENT_NOTES = {
    "classic": [],
    "normalized_continuous": [
        "normalize observations with running mean/variance (gymnasium NormalizeObservation) and clip to "
        "+-10: the training script did not save these statistics, so they are not in the file",
        "clip actions to the action bounds (gymnasium ClipAction)",
    ],
    "atari": [
        "Atari preprocessing: no-op reset (up to 30), max-pool and skip 4 frames, fire on reset, 84x84 "
        "grayscale, stack the last 4 frames; pass pixel values 0..255 as float32",
    ],
    "envpool": [
        "EnvPool Atari preprocessing (envpool.make defaults, as CleanRL's *_envpool* scripts train): ALE v5 "
        "game with repeat_action_probability 0; on reset and after each life loss 0-29 single-frame no-ops "
        "then one FIRE; repeat each action 4 frames and max-pool the last two ALE-grayscale frames; 84x84 "
        "INTER_AREA resize; stack the last 4 frames (uint8, channel-first); pass pixel values 0..255 as "
        "float32 (EnvPool itself, or zoo.envpool_atari.EnvPoolAtari, does all of this)",
    ],
}


def extras_for_env(env_id: str) -> list[str]:
    """Optional dependency groups an env id needs (cheap: no imports)."""
    task_extra = extra_for(env_id)
    if task_extra:
        return [task_extra]
    module = env_module_of(env_id)
    base = env_id.split(":")[-1].split("/")[-1].split("-v")[0]
    if module == "myosuite" or (module is None and base.startswith("myo")):
        return ["myosuite"]
    if base in MUJOCO_ENVS:
        return ["mujoco"]
    if env_id.startswith("ALE/") or "NoFrameskip" in env_id or _ENVPOOL_ID.fullmatch(env_id):
        return ["atari"]
    return []


#: The modules each env extra is known by (their presence means the extra is installed). A framework's extras
#: are its adapter's (:attr:`zoo.frameworks.Adapter.extra_modules`, looked up by :func:`zoo.frameworks.extra_modules`).
EXTRA_MODULES = {
    "mujoco": ("mujoco",),
    "atari": ("ale_py",),
    "video": ("moviepy", "pygame"),
    "genesis": ("genesis", "tensordict"),
    "myosuite": ("myosuite",),
}


def missing_modules_for_extras(
    extras: list[str], modules: Mapping[str, tuple[str, ...] | None] = EXTRA_MODULES
) -> list[str]:
    """Extras whose import module is absent (find_spec, nothing imported); ``modules``: each extra's modules."""
    from importlib.util import find_spec

    return [e for e in extras if any(find_spec(m) is None for m in modules.get(e) or ())]


_MODULE_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def env_module_of(env_id: str) -> str | None:
    """The module of gymnasium's ``module:EnvId`` syntax (gym.make imports it, which registers the env)."""
    return env_id.split(":", 1)[0] if ":" in env_id else None


def qualify_env_id(env_id: str, env_module: str | None) -> str:
    """``env_id`` in gymnasium's ``module:EnvId`` form when ``--env-module`` names the package that registers it
    (MyoSuite's envs exist once ``myosuite`` is imported). The id then says where its env comes from wherever it
    is recorded (eval.json, an export's sidecar), and every ``gym.make`` of it imports the module first."""
    if not env_module:
        return env_id
    from importlib.util import find_spec

    if not _MODULE_NAME.fullmatch(env_module):
        raise UsageError(
            f"--env-module {env_module!r}: not a module name",
            hint="give an importable module, e.g. --env-module myosuite",
        )
    named = env_module_of(env_id)
    if named is not None and named != env_module:
        raise UsageError(
            f"--env-module {env_module} contradicts the env id {env_id!r}",
            hint="give the module once: in the id (module:EnvId) or with --env-module",
        )
    if find_spec(env_module.split(".")[0]) is None:
        extras = [e for e, modules in EXTRA_MODULES.items() if env_module.split(".")[0] in modules]
        hint = (
            f"pip install 'rl-zoo-hub[{extras[0]}]'"
            if extras
            else f"install the package that provides {env_module}"
        )
        raise ZooError(f"--env-module {env_module}: no such module is installed", hint=hint)
    return env_id if named else f"{env_module}:{env_id}"


#: What to install when a recorder cannot import one of the video extra's modules (moviepy encodes,
#: imageio-ffmpeg ships ffmpeg, pygame draws the classic-control frames). gymnasium's own message names
#: ``gymnasium[other]`` / ``gymnasium[classic-control]``, which a zoo user has no reason to know.
VIDEO_HINT = "install the video extra: pip install 'rl-zoo-hub[video]'"
VIDEO_MODULES = frozenset({"moviepy", "imageio", "imageio_ffmpeg", "pygame", "proglog", "decorator", "PIL"})


@dataclass
class VideoLog:
    """What env 0's recorder did, for the caller to report: the mp4 files it wrote and why it stopped.

    Hand one to the recorder in ``EnvSpec.video_log``; the vector env is a SyncVectorEnv, so the recorder
    runs in this process and appends to this very object. ``written`` holds each file once it is complete
    (``video_dir / "rl-video-episode-N.mp4"``, in the order written; the last one may be an episode cut
    short when the eval closed the env). ``failures`` holds one line per failure (at most one: after it
    nothing is recorded); each is also issued as a warning with the same text, starting "video capture".
    """

    written: list[Path] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class EnvSpec:
    """What the evaluator needs to build one env: id, preset, video settings and the step bound.

    ``max_steps`` is the rollout's step bound (``--max-steps``); None: the env's own time limit, else
    :data:`zoo.rollout_guard.DEFAULT_MAX_STEPS` (see :func:`step_bound`). The ``run_config`` preset also
    carries the ``gym.make`` keyword arguments and the wrappers (in
    order, on top of ``RecordEpisodeStatistics``) that the run's config names, and the wrapper
    classes the user trusts beyond :data:`zoo.env_wrappers.ALLOWED`; all frozen (see
    :func:`zoo.env_wrappers.freeze`), so a spec is hashable and its spaces are probed once."""

    env_id: str
    preset: str = "classic"
    video_dir: str | None = None
    #: Where env 0's recorder reports the files it wrote and its failures (None: warnings only).
    video_log: VideoLog | None = field(default=None, compare=False, repr=False)
    env_kwargs: tuple = ()
    wrappers: tuple = ()  # of zoo.env_wrappers.WrapperRef
    trusted_wrappers: frozenset[str] = frozenset()
    max_steps: int | None = None

    def to_json(self) -> dict:
        """The env as an exported policy's sidecar records it (no video settings, no trust, no bound)."""
        from zoo.env_wrappers import jsonable, thaw_kwargs

        data: dict = {"id": self.env_id, "preset": self.preset}
        if self.preset == "run_config":
            data["env_kwargs"] = jsonable(thaw_kwargs(self.env_kwargs))
            data["wrappers"] = [ref.to_json() for ref in self.wrappers]
        return data

    @classmethod
    def from_json(cls, data: dict, trusted_wrappers: frozenset[str] = frozenset()) -> EnvSpec:
        from zoo.env_wrappers import WrapperRef, freeze

        return cls(
            env_id=data["id"],
            preset=data["preset"],
            env_kwargs=freeze(dict(data.get("env_kwargs") or {})),
            wrappers=tuple(WrapperRef.from_json(w) for w in data.get("wrappers") or ()),
            trusted_wrappers=trusted_wrappers,
        )

    def deployment_notes(self) -> list[str]:
        """What a deployed (exported) policy must reproduce of this env's wrappers itself."""
        if self.preset != "run_config":
            return PRESET_DEPLOYMENT_NOTES.get(self.preset, [])
        from zoo.env_wrappers import describe, thaw_kwargs

        stack = "; then ".join(describe(ref) for ref in self.wrappers)
        notes = [f"the env wrappers the run was trained behind, in order: {stack}"] if stack else []
        if self.env_kwargs:
            notes.append(f"make the env with {dict(thaw_kwargs(self.env_kwargs))}")
        return notes

    def obs_terms(self) -> dict:
        """The observation terms a sidecar records by group: a gymnasium env's observation is its own,
        with no terms zoo knows (zoo's tensor tasks name theirs, :meth:`TensorEnvSpec.obs_terms`)."""
        return {}


def list_videos(video_dir: str | os.PathLike, since: float | None = None) -> list[Path]:
    """The mp4 files ``video_dir`` holds, in episode order (``episode-2`` before ``episode-10``).

    A folder that does not exist holds none. ``since`` (a ``time.time()`` taken before the eval) keeps
    only the files written from then on: RecordVideo reuses the names ``rl-video-episode-N.mp4`` and leaves
    an earlier eval's extra files in place. :class:`VideoLog` says the same without relying on file times.
    """
    folder = Path(video_dir)
    if not folder.is_dir():
        return []
    found = [p for p in folder.glob("*.mp4") if p.is_file() and (since is None or p.stat().st_mtime >= since)]
    return sorted(found, key=lambda p: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", p.name)])


def _headless_rendering() -> None:
    """Render offscreen without the display and sound probes' noise; a variable the user set wins.

    pygame's SDL, asked for a display (``pygame.display.init()`` in the classic-control renderers), tries
    X11, then Wayland, then falls back to an offscreen driver: the Wayland try makes the system's
    libwayland-client print "error: XDG_RUNTIME_DIR is invalid or not set in the environment." on fd 2,
    and a sound init makes pygame's bundled libasound print "ALSA lib ..." lines. The frames are drawn on
    a ``pygame.Surface``, which needs neither, so SDL's dummy drivers give the same frames in silence.
    """
    os.environ.setdefault("MUJOCO_GL", "egl")
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")


def _video_failure(exc: BaseException) -> str:
    """Why recording failed; a missing module of the video extra names the extra as the fix."""
    missing = exc if isinstance(exc, ImportError) else exc.__cause__
    if isinstance(missing, ImportError) and (missing.name or "").split(".")[0] in VIDEO_MODULES:
        return f"{missing.name.split('.')[0]} is not installed ({VIDEO_HINT})"
    return str(exc) or type(exc).__name__


def _record_video(env, video_dir: str, log: VideoLog | None = None):
    """RecordVideo whose failures (no renderer, no encoder, no GL) become one warning, never a failed eval.

    Each failure is also appended to ``log.failures`` and each file written to ``log.written``.
    """
    from gymnasium.wrappers import RecordVideo

    log = VideoLog() if log is None else log

    def fail(stage: str, exc: BaseException) -> None:
        message = f"video capture {stage}: {_video_failure(exc)}"
        log.failures.append(message)
        warnings.warn(message, stacklevel=3)

    class _WarnOnFailure(RecordVideo):
        broken = False

        def _give_up(self, exc: Exception) -> None:
            if not self.broken:
                fail("stopped", exc)
            self.broken, self.recording, self.recorded_frames = True, False, []

        def start_recording(self, video_name: str) -> None:
            if not self.broken:
                super().start_recording(video_name)

        def _capture_frame(self) -> None:
            try:
                super()._capture_frame()
            except Exception as exc:  # noqa: BLE001 - any render error must not fail the eval
                self._give_up(exc)

        def stop_recording(self) -> None:
            path = Path(video_dir) / f"{self._video_name}.mp4"
            writes = len(self.recorded_frames) > 0  # RecordVideo skips (and warns about) an empty recording
            try:
                super().stop_recording()
            except Exception as exc:  # noqa: BLE001 - any encoder error must not fail the eval
                self._give_up(exc)
                return
            if writes:
                log.written.append(path)

    try:
        import moviepy  # noqa: F401 - RecordVideo needs it only at the first write: fail before that
    except ImportError as exc:
        fail("disabled", exc)
        return env
    try:
        with warnings.catch_warnings():
            # zoo writes each eval's videos to the same folder: gymnasium's notice is no news there
            warnings.filterwarnings("ignore", message=r".*Overwriting existing videos")
            return _WarnOnFailure(env, video_dir, episode_trigger=lambda _: True, disable_logger=True)
    except Exception as exc:  # noqa: BLE001
        fail("disabled", exc)
        return env


def _make_base(spec: EnvSpec, record: bool):
    import gymnasium as gym

    if spec.preset == "envpool":
        return _make_envpool(spec, record)
    if spec.preset == "atari" or "atari" in extras_for_env(spec.env_id):  # ale-py registers the ALE ids
        _import_ale()
    kwargs = {key: value for key, value in spec.env_kwargs}
    if record:
        kwargs["render_mode"] = "rgb_array"
    if record:
        _headless_rendering()  # before gym.make: MuJoCo reads MUJOCO_GL when it is imported
    try:
        env = gym.make(spec.env_id, **kwargs)
    except gym.error.Error as exc:
        missing = missing_modules_for_extras(extras_for_env(spec.env_id))
        hint = f" (install the extra: pip install 'rl-zoo-hub[{missing[0]}]')" if missing else ""
        raise ZooError(f"cannot create env {spec.env_id!r}: {exc}{hint}") from None
    except ImportError as exc:
        raise ZooError(f"cannot create env {spec.env_id!r}: {exc}") from None
    if record:
        env = _record_video(env, spec.video_dir, spec.video_log)
    return env


def _import_ale() -> None:
    try:
        import ale_py  # noqa: F401 - registers the ALE envs with gymnasium
    except ImportError:
        raise ZooError("Atari envs need the atari extra: pip install 'rl-zoo-hub[atari]'") from None


def _make_envpool(spec: EnvSpec, record: bool):
    """zoo's rebuild of EnvPool's Atari env, scored as CleanRL's ppo_envpool_jax_eval scores it.

    The training config (``episodic_life=True``) stays, because it changes the observations (no-ops +
    FIRE after each life loss); the reward is left unclipped and an episode is a full game.
    """
    _import_ale()
    try:
        import cv2  # noqa: F401 - the atari extra's opencv: EnvPool resizes with INTER_AREA
    except ImportError:
        raise ZooError("EnvPool Atari envs need the atari extra: pip install 'rl-zoo-hub[atari]'") from None
    from zoo.envpool_atari import EnvPoolAtari

    # another gymnasium env: made, for the fit check to say what it is
    if not _ENVPOOL_ID.fullmatch(spec.env_id):
        _refuse_unwrappable(_make_base(dataclasses.replace(spec, preset="classic"), record=False), spec)
    try:
        env = EnvPoolAtari(
            spec.env_id,
            episodic_life=True,
            reward_clip=False,
            episode="game",
            render_mode="rgb_array" if record else None,
        )
    except ValueError as exc:
        raise ZooError(f"cannot create env {spec.env_id!r}: {exc}") from None
    if record:
        env = _record_video(env, spec.video_dir, spec.video_log)
    return env


class PresetMismatch(ZooError):
    """An env that a preset's wrappers cannot wrap (the atari preset on a non-ALE env, ClipAction on discrete
    actions): what the env is, kept in :attr:`spaces`, for the adapter's fit check to word as a kind mismatch."""

    def __init__(self, message: str, spaces: tuple, hint: str | None = None):
        super().__init__(message, hint)
        self.spaces = spaces  # (observation_space, action_space) of the env as made, before the preset


def _refuse_unwrappable(env, spec: EnvSpec) -> None:
    """Refuse an env the preset's wrappers were not written for, before they fail inside (their errors name
    gymnasium's internals, not the env)."""
    import gymnasium as gym

    if spec.preset == "normalized_continuous" and not isinstance(env.action_space, gym.spaces.Box):
        need = "wraps envs with continuous (Box) actions"
    elif spec.preset == "atari" and not callable(getattr(env.unwrapped, "get_action_meanings", None)):
        need = "wraps Atari (ALE) envs"
    elif spec.preset == "envpool" and not _ENVPOOL_ID.fullmatch(spec.env_id):
        need = "makes EnvPool's Atari games (ids like Breakout-v5)"
    else:
        return
    spaces = (env.observation_space, env.action_space)
    env.close()
    raise PresetMismatch(
        f"the {spec.preset} preset {need}; {spec.env_id} is not one", spaces, hint="check --env-id"
    )


def _wrap(env, spec: EnvSpec):
    import gymnasium as gym
    import numpy as np

    _refuse_unwrappable(env, spec)
    preset = spec.preset
    if preset == "run_config":
        from zoo.env_wrappers import apply

        return apply(gym.wrappers.RecordEpisodeStatistics(env), spec.wrappers, spec.trusted_wrappers)
    if preset in ("classic", "envpool"):  # envpool: preprocessing and full-game episodes are in the env
        return gym.wrappers.RecordEpisodeStatistics(env)
    if preset == "normalized_continuous":
        # CleanRL ppo_continuous_action: the observation normalizer is not saved with the
        # model, so (like CleanRL's own eval) statistics are re-estimated online.
        env = gym.wrappers.FlattenObservation(env)
        env = gym.wrappers.RecordEpisodeStatistics(env)
        env = gym.wrappers.ClipAction(env)
        env = gym.wrappers.NormalizeObservation(env)
        return gym.wrappers.TransformObservation(
            env, lambda obs: np.clip(obs, -10, 10), env.observation_space
        )
    if preset == "atari":
        from stable_baselines3.common.atari_wrappers import (
            ClipRewardEnv,
            EpisodicLifeEnv,
            FireResetEnv,
            MaxAndSkipEnv,
            NoopResetEnv,
        )

        env = gym.wrappers.RecordEpisodeStatistics(env)
        env = NoopResetEnv(env, noop_max=30)
        env = MaxAndSkipEnv(env, skip=4)
        env = EpisodicLifeEnv(env)
        if "FIRE" in env.unwrapped.get_action_meanings():
            env = FireResetEnv(env)
        env = ClipRewardEnv(env)
        env = gym.wrappers.ResizeObservation(env, (84, 84))
        env = gym.wrappers.GrayscaleObservation(env)
        return gym.wrappers.FrameStackObservation(env, 4)
    raise ZooError(f"unknown env preset {preset!r}; known: {', '.join(PRESETS)}")


def env_factory(spec: EnvSpec, index: int) -> Callable:
    """A thunk for the vector env; only env 0 records video."""

    def thunk():
        base = _make_base(spec, record=spec.video_dir is not None and index == 0)
        return _wrap(step_bound(base, spec.max_steps), spec)

    return thunk


def own_step_limit(env) -> int | None:
    """The env's own bound on an episode's steps: gymnasium's TimeLimit (``spec.max_episode_steps``), ALE's
    ``max_num_frames_per_episode`` (frames, at least as many as its steps), or an env's ``max_episode_steps``
    attribute (zoo's EnvPool Atari); None when it has none."""
    spec = env.spec
    for value in (
        getattr(spec, "max_episode_steps", None),
        (getattr(spec, "kwargs", None) or {}).get("max_num_frames_per_episode"),
        getattr(env.unwrapped, "max_episode_steps", None),
    ):
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def step_bound(env, max_steps: int | None):
    """``env`` under zoo's step bound (:class:`zoo.step_bound.StepBound`), below RecordEpisodeStatistics so that a
    cut episode is recorded; ``max_steps`` None: the env's own limit, else the default cap. No wrapper when the
    env's own limit comes first: then nothing is added to the step, and nothing can change."""
    from zoo.rollout_guard import DEFAULT_MAX_STEPS

    own = own_step_limit(env)
    if max_steps is None:
        if own is not None:
            return env
        max_steps = DEFAULT_MAX_STEPS
    if own is not None and own <= max_steps:
        return env
    from zoo.step_bound import StepBound

    return StepBound(env, max_steps)


def make_vector_env(spec: EnvSpec, num_envs: int):
    """A SyncVectorEnv: on few cores it beats AsyncVectorEnv by 2-9x for these envs."""
    import gymnasium as gym

    if spec.video_dir is not None:
        _headless_rendering()
    return _made(spec, lambda: gym.vector.SyncVectorEnv([env_factory(spec, i) for i in range(num_envs)]))


def _made(spec: EnvSpec, make: Callable):
    """``make()``, with an exception the env's own constructor raises said as the env's, in one line naming it."""
    try:
        return make()
    except Exception as exc:  # noqa: BLE001 - the env's code failed (a user's env, a simulator): its error
        from zoo.rollout_guard import env_error, gym_env_label

        raise env_error(exc, gym_env_label(spec.env_id), "its constructor (gym.make)") from None


def reset_restores(spec) -> bool:
    """Whether ``reset(seed=...)`` of this spec's vector env restores all of its state, so that one env
    kept for many evaluations gives each the episodes a fresh env would (``zoo watch`` keeps one).

    True for a plain ``gym.make`` under ``RecordEpisodeStatistics`` (the classic preset, or a run config
    that wraps nothing). Not for the presets whose wrappers carry state across resets: the observation
    normalizer's running statistics (normalized_continuous), the Atari stack's episodic life (its reset
    goes on from a lost life), a run config's own wrappers, EnvPool's game counter, a recorder's episode
    numbers; nor for batched tensor envs, which are seeded only when built."""
    if not isinstance(spec, EnvSpec) or spec.video_dir is not None:
        return False
    return spec.preset == "classic" or (spec.preset == "run_config" and not spec.wrappers)


def env_spec_for(entry: Entry, env_id: str, video_dir: str | None = None) -> EnvSpec | TensorEnvSpec:
    """A registry entry's eval env: its preset on ``env_id`` (every adapter's ``env_spec``), or zoo's
    tensor task of that id (:data:`zoo.tensor_env.TASKS`) with the task's default config."""
    if is_task(env_id):
        return TensorEnvSpec(env_id, video_dir=video_dir)
    return EnvSpec(env_id=env_id, preset=entry.env["wrappers"], video_dir=video_dir)


def probe_spaces(spec: EnvSpec | TensorEnvSpec) -> tuple[Any, Any] | None:
    """``(single_observation_space, single_action_space)`` of the wrapped env, built once per env stack.

    A tensor task states its spaces without being built; a user's tensor env (``--env-factory``) is
    not built to find out: None, the policy's checkpoint says them and the first observation is checked."""
    if isinstance(spec, TensorEnvSpec):
        return spec.spaces()
    plain = dataclasses.replace(spec, video_dir=None, video_log=None, max_steps=None)
    return _made(spec, lambda: _probe(plain))


@lru_cache(maxsize=64)
def _probe(spec: EnvSpec):
    env = env_factory(spec, 0)()
    try:
        return env.observation_space, env.action_space
    finally:
        env.close()
