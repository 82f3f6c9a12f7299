"""EnvPool's Atari env, as CleanRL's ``*_envpool*`` scripts train on it, rebuilt on gymnasium + ale-py.

Why a rebuild and not EnvPool itself: envpool 1.2.5 does install next to zoo's pins, but it is a 53 MB
wheel plus asset wheels, x86-64 only, and CleanRL trained with envpool 0.6.x; the env is small. The model
is ``envpool/atari/atari_env.h`` (sail-sg/envpool v0.6.6 .. 1.2.5, unchanged for the defaults used here).
:class:`EnvPoolAtari` reproduces it frame for frame (same observations, rewards, lives and done flags;
``tests/test_envpool.py`` checks that against envpool 1.2.5 where it is installed). Exactness notes:

* ``ale_py.ALEInterface`` with frameskip 1 and ``repeat_action_probability`` 0.0 by default, as EnvPool
  (not ale-py's v5 default of 0.25); the minimal action set; the ROM from ``ale_py.roms``;
* grayscale from ALE's own palette (``getScreenGrayscale``, the ``applyPaletteGrayscale`` EnvPool calls),
  not cv2's RGB2GRAY as SB3's WarpFrame does;
* max-pool of the *gray* frames 3 and 4 of each 4-frame skip (SB3's MaxAndSkipEnv pools RGB frames before
  graying); no pooling when the game ended before frame 4, and when it ended on frame 1 or 2 the previous
  step's frame-3 buffer is what gets pooled away, as in the C++ (the buffers are reused, not cleared);
* ``cv2.resize(..., (84, 84), interpolation=cv2.INTER_AREA)`` (EnvPool's ``use_inter_area_resize=True``);
* no-op reset: ``std::uniform_int_distribution<>(0, noop_max - 1)(std::mt19937(seed))`` + 1 no-ops, one
  fewer when the game has FIRE, each a *single ALE frame* (raw action 0), then one single-frame FIRE;
  :class:`StdNoopRng` rebuilds the draw bit-exactly (libstdc++'s Lemire method, GCC >= 11; the 1.2.5
  wheel is built with GCC 14);
* episodic life: a life loss ends EnvPool's episode; the reset that follows does not reset the game, it
  plays the no-ops + FIRE again and keeps the frame stack (only a real game reset refills it);
* ``max_episode_steps``: 27000 agent steps counted across lives (envpool >= 0.8.2, commit 55eb8262 "fix
  atari max_episode_steps (#250)"); envpool 0.6.x, which CleanRL pins, registered 108000;
* reward clipping to the sign when asked (training only); ``info["reward"]`` is always the raw reward.

Episodes for an evaluation are *full games* (``episode="game"``), which is what CleanRL's own
``cleanrl_utils/evals/ppo_envpool_jax_eval.py`` scores: it keeps the training env's ``episodic_life=True``
and sums ``infos["reward"]`` (unclipped) until ``infos["terminated"]`` (EnvPool's game-over flag). A life
loss is then no episode end: the next ``step()`` ignores its action and performs EnvPool's life-loss reset
(no-ops + FIRE), returning reward 0 exactly as EnvPool's auto-reset step does, and ``terminated`` is the
game over. ``episode="life"`` gives EnvPool's own done flags (``terminated`` at each life loss).
"""

from __future__ import annotations

import re
import warnings
from collections import deque
from typing import Any

import gymnasium as gym
import numpy as np

RAW_H, RAW_W = 210, 160
EPISODES = ("game", "life")


class StdNoopRng:
    """``std::mt19937(seed)`` drawn by libstdc++'s ``std::uniform_int_distribution<int>(0, n - 1)``.

    EnvPool draws its no-op count this way; libstdc++ (GCC >= 11) maps a 32-bit word to ``[0, n)`` with
    Lemire's nearly divisionless method on the 64-bit product. numpy's MT19937 with its legacy seeding is
    ``init_genrand(seed)``, i.e. ``std::mt19937(seed)``.
    """

    def __init__(self, seed: int):
        self._bits = np.random.MT19937(0)
        self._bits._legacy_seeding(seed & 0xFFFFFFFF)  # numpy's RandomState(seed) path: init_genrand

    def raw(self) -> int:
        """The next 32-bit word, as ``std::mt19937::operator()``."""
        return int(self._bits.random_raw())

    def below(self, n: int) -> int:
        """A draw from ``[0, n)``, as ``std::uniform_int_distribution<int>(0, n - 1)(gen)``."""
        product = self.raw() * n
        low = product & 0xFFFFFFFF
        if low < n:
            threshold = ((1 << 32) - n) % n
            while low < threshold:
                product = self.raw() * n
                low = product & 0xFFFFFFFF
        return product >> 32


def is_envpool_id(env_id: str) -> bool:
    """EnvPool's Atari ids are ``Name-v5`` with no ``ALE/`` namespace (``Breakout-v5``)."""
    return re.fullmatch(r"[A-Z][A-Za-z0-9]*-v5", env_id) is not None


def envpool_task(env_id: str) -> str:
    """EnvPool's ``Breakout-v5`` / ``MontezumaRevenge-v5`` -> ALE ROM name ``breakout`` / ``montezuma_revenge``."""
    if not is_envpool_id(env_id):
        raise ValueError(f"{env_id!r} is not an EnvPool Atari id (Name-v5, such as Breakout-v5)")
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", env_id[: -len("-v5")]).lower()


class EnvPoolAtari(gym.Env):
    """One EnvPool Atari env, ``envpool.make(env_id, num_envs=1, seed=seed, **config)``, as a gymnasium Env.

    The keyword arguments are EnvPool's config names and defaults, plus ``episode`` (see the module
    docstring). ``reset(seed=s)`` rebuilds the env as ``envpool.make(..., seed=s)`` would; a vector of them
    reset with ``seed=s`` (env ``i`` gets ``s + i``) matches ``envpool.make(..., num_envs=N, seed=s)``.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 15}  # 60 ALE frames/s, one render per 4

    def __init__(
        self,
        env_id: str = "Breakout-v5",
        *,
        seed: int = 42,
        episodic_life: bool = False,
        reward_clip: bool = False,
        noop_max: int = 30,
        frame_skip: int = 4,
        stack_num: int = 4,
        img_height: int = 84,
        img_width: int = 84,
        repeat_action_probability: float = 0.0,
        use_fire_reset: bool = True,
        max_episode_steps: int = 27000,
        full_action_space: bool = False,
        episode: str = "game",
        render_mode: str | None = None,
    ):
        import cv2  # noqa: F401 - fail at construction, not at the first step
        from ale_py import roms

        if episode not in EPISODES:
            raise ValueError(f"episode must be one of {EPISODES}, not {episode!r}")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', not {render_mode!r}")
        self.task = envpool_task(env_id)
        with warnings.catch_warnings():  # ale-py warns, then returns None, for a game it does not ship
            warnings.simplefilter("ignore")
            rom = roms.get_rom_path(self.task)
        if rom is None:
            raise ValueError(f"{env_id!r}: ale-py has no ROM {self.task!r}")
        self._rom = str(rom)
        self.episodic_life, self.reward_clip, self.episode = episodic_life, reward_clip, episode
        self.noop_max, self.frame_skip, self.stack_num = noop_max, frame_skip, stack_num
        self.size = (img_height, img_width)
        self.repeat_action_probability = repeat_action_probability
        self.use_fire_reset, self.full_action_space = use_fire_reset, full_action_space
        self.max_episode_steps = max_episode_steps
        self.render_mode = render_mode
        self._construct(seed)
        self.action_space = gym.spaces.Discrete(len(self._actions))
        self.observation_space = gym.spaces.Box(0, 255, (stack_num, *self.size), np.uint8)

    # ------------------------------------------------------------------ EnvPool's constructor
    def _construct(self, seed: int) -> None:
        """A fresh ALE and no-op generator, both seeded with ``seed``, as AtariEnv's constructor."""
        from ale_py import Action, ALEInterface, LoggerMode

        ALEInterface.setLoggerMode(LoggerMode.Error)
        self.ale = ale = ALEInterface()
        ale.setFloat("repeat_action_probability", float(self.repeat_action_probability))
        ale.setInt("random_seed", int(seed))
        ale.loadROM(self._rom)
        self._actions = list(ale.getLegalActionSet() if self.full_action_space else ale.getMinimalActionSet())
        self._fire_reset = self.use_fire_reset and Action.FIRE in self._actions
        self._rng = StdNoopRng(seed)
        self._elapsed = self.max_episode_steps + 1
        # the two gray frames of a skip that get max-pooled; reused across steps, as EnvPool's buffers
        self._pool = [np.zeros((RAW_H, RAW_W), np.uint8) for _ in range(2)]
        self._stack = deque(np.zeros(self.size, np.uint8) for _ in range(self.stack_num))
        self._pending_life_reset = False
        self._lives = 0

    def _push(self, push_all: bool, maxpool: bool) -> None:
        """Pool (optionally), resize and push the frame; ``push_all`` fills the whole stack with it."""
        import cv2

        frame = self._pool[0]
        if maxpool:
            np.maximum(self._pool[0], self._pool[1], out=frame)
        small = cv2.resize(frame, self.size[::-1], interpolation=cv2.INTER_AREA)
        self._stack.popleft()
        self._stack.append(small)
        if push_all:
            for i in range(self.stack_num):
                self._stack[i] = small.copy()

    def _obs(self) -> np.ndarray:
        return np.stack(self._stack)

    def _info(self, raw_reward: float) -> dict[str, Any]:
        """EnvPool's info fields: ``terminated`` is the game over, ``reward`` the unclipped reward."""
        return {
            "lives": self._lives,
            "reward": raw_reward,
            "terminated": bool(self.ale.game_over()),
            "elapsed_step": self._elapsed,
        }

    # ------------------------------------------------------------------ AtariEnv::Reset
    def _envpool_reset(self, force: bool) -> None:
        """EnvPool's reset: a game reset unless only a life was lost, then the no-ops and FIRE."""
        from ale_py import Action

        ale = self.ale
        noop = self._rng.below(self.noop_max) + 1 - int(self._fire_reset)  # drawn on every reset
        push_all = False
        if force or not self.episodic_life or ale.game_over() or self._elapsed >= self.max_episode_steps:
            ale.reset_game()
            self._elapsed = 0
            push_all = True
        for _ in range(noop):
            ale.act(Action.NOOP)
            if ale.game_over():
                ale.reset_game()
                push_all = True
        if self._fire_reset:
            ale.act(Action.FIRE)
        ale.getScreenGrayscale(self._pool[0])
        self._push(push_all, maxpool=False)
        self._lives = ale.lives()

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None:
            self._construct(seed)
        self._envpool_reset(force=True)  # an explicit reset resets the game (envpool >= 0.9.1, 623637f4)
        self._pending_life_reset = False
        return self._obs(), self._info(0.0)

    # ------------------------------------------------------------------ AtariEnv::Step
    def step(self, action):
        if self._pending_life_reset:  # EnvPool's auto-reset step after a life loss: the action is ignored
            self._pending_life_reset = False
            self._envpool_reset(force=False)
            return self._obs(), 0.0, False, False, {**self._info(0.0), "life_reset": True}
        ale, reward, done = self.ale, 0.0, False
        pooled = min(self.frame_skip, 2)
        skip = self.frame_skip
        while skip > 0 and not done:
            reward += ale.act(self._actions[int(action)])
            done = ale.game_over()
            if skip <= pooled:  # the last two frames of the skip
                ale.getScreenGrayscale(self._pool[pooled - skip])
            skip -= 1
        self._push(False, maxpool=self.frame_skip > 1 and skip == 0)
        self._elapsed += 1
        game_over = done
        truncated = self._elapsed >= self.max_episode_steps
        lives = ale.lives()
        life_lost = self.episodic_life and 0 < lives < self._lives
        self._lives = lives
        raw = float(reward)
        if self.reward_clip:
            reward = float(np.sign(reward))
        info = self._info(raw)
        if self.episode == "game" and life_lost and not (game_over or truncated):
            self._pending_life_reset = True
            info["life_loss"] = True
            return self._obs(), reward, False, False, info
        terminated = (game_over or life_lost) and not truncated
        return self._obs(), reward, terminated, truncated, info

    def render(self) -> np.ndarray:
        """The current ALE screen, RGB ``(210, 160, 3)`` (the last frame of the last skip)."""
        return self.ale.getScreenRGB()
