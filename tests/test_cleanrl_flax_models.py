"""zoo's torch ports of CleanRL's flax networks against the flax modules of the real scripts.

``zoo.frameworks.cleanrl.flax_models`` re-implements, in torch, the flax modules of CleanRL's JAX
scripts. Here the flax classes come from the scripts' own text: the ``class`` statements of each
script in the real ``cleanrl==1.2.0`` wheel (the wheel test_cleanrl_compat.py downloads and pins)
are parsed and executed with flax, without importing the script (its top-level imports want envpool,
old gym, stable-baselines3...). ``qdagger_dqn_atari_jax_impalacnn.py`` is not in the 1.2.0 wheel:
its classes are the verbatim text of upstream's script at commit fe8d8a0 (:128-178), below.

For every script that saves a model, each test inits the flax modules with a fixed key on the
script's observation shape, replaces every param by random O(1)-output values (flax's zero biases
would hide a wrong bias), writes ``flax.serialization.to_bytes`` of the script's own save structure,
reads it back with ``flax.serialization.msgpack_restore`` and builds zoo's port from that; then the
two must agree on 256 random observations (max |diff| <= 1e-5, identical argmax).

TD3/DDPG: the 1.2.0 scripts have no ``--save-model``; the save structure is upstream's
(``[actor, qf1, qf2]`` / ``[actor, qf1]`` params, fe8d8a0 td3 :326-338, ddpg :284-295). Their network
classes in 1.2.0 and upstream differ only in type annotations.

Where each network sits in a whole file (``params...``, ``model_weights.params...``, ``0.params...``)
is read from the script's ``layout`` in ``registry.yaml``, through
:mod:`zoo.frameworks.cleanrl.flaxlayout`, as ``zoo`` itself loads these files: the helpers below
(``_file_shapes``, ``_load``, ``_saved_args``) do nothing but follow that entry.

The parity tests need jax and flax; they are skipped, saying so, only where those cannot be imported.
The shape and error tests need neither.
"""

from __future__ import annotations

import argparse
import ast
import functools
import os
import sys
import zipfile
from typing import Sequence  # noqa: UP035 - the scripts' class bodies evaluate Sequence[int]

import gymnasium
import numpy as np
import pytest
import torch
from helpers import spaces as helper_spaces

from zoo.errors import LayoutMismatch, UnsupportedError, ZooError
from zoo.frameworks.cleanrl import flax_models as fm
from zoo.frameworks.cleanrl import flaxlayout
from zoo.registry import Entry, load_registry

try:
    import flax
    import flax.linen
    import flax.serialization
    import jax
    import jax.numpy as jnp
    from flax.linen.initializers import constant, orthogonal

    JAX_MISSING = None
except ImportError as exc:  # pragma: no cover - jax/flax are installed in zoo's dev venv
    JAX_MISSING = f"jax/flax not importable: {exc}"

needs_jax = pytest.mark.skipif(JAX_MISSING is not None, reason=JAX_MISSING or "")


# ----------------------------------------------------------------------------- the registry's layouts
def _entry(script: str) -> Entry:
    """The script's registry entry: the one description of its ``--save-model`` file."""
    return load_registry().get(script)


def _flax_scripts() -> set[str]:
    """Every registry entry whose file is a flax msgpack, each part with a torch port."""
    registry = load_registry()
    return {name for name in registry.names() if registry.get(name).layout.get("kind") == "flax"}


def _prefix(path: str) -> str:
    """A layout path as a key prefix: ``""`` (the whole file) none, ``"1"`` -> ``"1."``."""
    return f"{path}." if path else ""


def _file_shapes(script: str, observation_space, action_space, **kwargs) -> dict[str, tuple]:
    """Dotted key -> shape of every array in the script's file: each part's port shapes at its path."""
    entry = _entry(script)
    shapes: dict[str, tuple] = {}
    for part in entry.parts:
        prefix = _prefix(entry.layout["paths"][part])
        port_shapes = flaxlayout.port(entry, part).flax_shapes(observation_space, action_space, **kwargs)
        shapes.update({prefix + k: v for k, v in port_shapes.items()})
    return shapes


def _load(script: str, restored, observation_space, action_space) -> dict[str, fm.FlaxPort]:
    """Every part of a restored file as zoo loads it: split, fit to the spaces, build (on cpu)."""
    entry = _entry(script)
    spaces = (observation_space, action_space)
    parts, kwargs = flaxlayout.split(entry, restored)
    problem = flaxlayout.fit_problem(entry, parts, kwargs, spaces)
    if problem is not None:
        where, what = problem
        raise LayoutMismatch(f"{script}{where}: {what}")
    return {
        part: flaxlayout.build(entry, part, tree, spaces, kwargs, device="cpu")
        for part, tree in parts.items()
    }


def _saved_args(script: str, restored) -> dict:
    """The ``vars(args)`` the file carries at the layout's ``args_path`` (``{}`` where it has none)."""
    entry = _entry(script)
    if "args_path" not in entry.layout:
        return {}
    return dict(flaxlayout.at_path(restored, entry.layout["args_path"], script))


PPO = "ppo_atari_envpool_xla_jax_scan"

N_OBS = 256
ATOL = 1e-5

# ----------------------------------------------------------------------------- spaces
ATARI_OBS = gymnasium.spaces.Box(0, 255, (4, 84, 84), np.uint8)  # gymnasium FrameStack and EnvPool alike
ODD_ATARI_OBS = gymnasium.spaces.Box(0, 255, (4, 72, 90), np.uint8)  # non-square: H/W mix-ups show
ASYMMETRIC_ACT = gymnasium.spaces.Box(
    np.array([-1.0, 0.0, -3.0], np.float32), np.array([2.0, 1.0, 3.0], np.float32), dtype=np.float32
)


_env_spaces = functools.cache(helper_spaces)  # built once per env id


SPACES = {
    "CartPole-v1": lambda: _env_spaces("CartPole-v1"),
    "Acrobot-v1": lambda: _env_spaces("Acrobot-v1"),
    "Pendulum-v1": lambda: _env_spaces("Pendulum-v1"),
    "box11-act3-asymmetric": lambda: (
        gymnasium.spaces.Box(-np.inf, np.inf, (11,), np.float32),
        ASYMMETRIC_ACT,
    ),
    "atari-6": lambda: (ATARI_OBS, gymnasium.spaces.Discrete(6)),
    "atari-4-72x90": lambda: (ODD_ATARI_OBS, gymnasium.spaces.Discrete(4)),
}


# ----------------------------------------------------------------------------- the scripts' classes
#: script -> {flax class: (first line, last line)} in the 1.2.0 wheel's script
WHEEL_CLASSES = {
    "dqn_jax": {"QNetwork": (94, 104)},
    "dqn_atari_jax": {"QNetwork": (114, 131)},
    "c51_jax": {"QNetwork": (94, 107)},
    "c51_atari_jax": {"QNetwork": (114, 134)},
    "td3_continuous_action_jax": {"QNetwork": (83, 92), "Actor": (95, 109)},
    "ddpg_continuous_action_jax": {"QNetwork": (83, 92), "Actor": (95, 109)},
    "ppo_atari_envpool_xla_jax_scan": {"Network": (113, 148), "Critic": (151, 154), "Actor": (157, 162)},
}

# Verbatim from https://github.com/vwxyzjn/cleanrl/blob/fe8d8a03c41a7ef5b523e2e354bd01c363e786bb/
# cleanrl/qdagger_dqn_atari_jax_impalacnn.py lines 128-178 (not in the 1.2.0 wheel).
QDAGGER_UPSTREAM_CLASSES = """
class ResidualBlock(nn.Module):
    channels: int

    @nn.compact
    def __call__(self, x):
        inputs = x
        x = nn.relu(x)
        x = nn.Conv(
            self.channels,
            kernel_size=(3, 3),
        )(x)
        x = nn.relu(x)
        x = nn.Conv(
            self.channels,
            kernel_size=(3, 3),
        )(x)
        return x + inputs


class ConvSequence(nn.Module):
    channels: int

    @nn.compact
    def __call__(self, x):
        x = nn.Conv(
            self.channels,
            kernel_size=(3, 3),
        )(x)
        x = nn.max_pool(x, window_shape=(3, 3), strides=(2, 2), padding="SAME")
        x = ResidualBlock(self.channels)(x)
        x = ResidualBlock(self.channels)(x)
        return x


# ALGO LOGIC: initialize agent here:
class QNetwork(nn.Module):
    action_dim: int
    channelss: Sequence[int] = (16, 32, 32)

    @nn.compact
    def __call__(self, x):
        x = jnp.transpose(x, (0, 2, 3, 1))
        x = x / (255.0)
        for channels in self.channelss:
            x = ConvSequence(channels)(x)
        x = nn.relu(x)
        x = x.reshape((x.shape[0], -1))
        x = nn.Dense(256)(x)
        x = nn.relu(x)
        x = nn.Dense(self.action_dim)(x)
        return x
"""


@functools.cache
def _script_text(script: str) -> str:
    from test_cleanrl_compat import _download_wheel  # the pinned, cached cleanrl 1.2.0 wheel

    with zipfile.ZipFile(_download_wheel()) as zf:
        return zf.read(f"cleanrl/{script}.py").decode()


def _strtobool(value: str) -> bool:  # distutils.util.strtobool, which the scripts import
    value = value.lower()
    if value in ("y", "yes", "t", "true", "on", "1"):
        return True
    if value in ("n", "no", "f", "false", "off", "0"):
        return False
    raise ValueError(f"invalid truth value {value!r}")


def _exec_nodes(source: str, filename: str, names: set[str]) -> tuple[dict, dict[str, tuple[int, int]]]:
    """Execute the top-level ``class``/``def`` statements called ``names`` of ``source``; (namespace, spans)."""
    tree = ast.parse(source)
    ns = {
        "__file__": filename,
        "argparse": argparse,
        "os": os,
        "strtobool": _strtobool,
        "np": np,
        "Sequence": Sequence,
        "flax": flax,
        "nn": flax.linen,
        "jax": jax,
        "jnp": jnp,
        "constant": constant,
        "orthogonal": orthogonal,
    }
    spans = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef) and node.name in names:
            exec(compile(ast.Module([node], type_ignores=[]), filename, "exec"), ns)
            spans[node.name] = (node.lineno, node.end_lineno)
    assert set(spans) == names, f"{filename}: found {sorted(spans)}, wanted {sorted(names)}"
    return ns, spans


@functools.cache
def _wheel_classes(script: str) -> dict:
    if script == "qdagger_dqn_atari_jax_impalacnn":
        ns, _ = _exec_nodes(
            QDAGGER_UPSTREAM_CLASSES, "qdagger_upstream", {"ResidualBlock", "ConvSequence", "QNetwork"}
        )
        return ns
    names = set(WHEEL_CLASSES[script])
    text = _script_text(script)
    ns, spans = _exec_nodes(
        text, f"cleanrl/{script}.py", names | ({"parse_args"} if "parse_args" in text else set())
    )
    for name, span in WHEEL_CLASSES[script].items():
        assert spans[name] == span, f"{script}.py {name} spans lines {spans[name]}, not {span}"
    return ns


def _script_args(script: str, argv: list[str]) -> dict:
    """``vars(args)`` from the script's own ``parse_args()`` on ``argv``."""
    saved = sys.argv
    sys.argv = [f"{script}.py", *argv]
    try:
        return vars(_wheel_classes(script)["parse_args"]())
    finally:
        sys.argv = saved


# ----------------------------------------------------------------------------- flax side
def _scramble(params, seed: int):
    """Every leaf random: kernels ~ N(0, 1/fan_in), biases ~ N(0, 0.3^2)."""
    rng = np.random.default_rng(seed)

    def draw(leaf):
        shape = leaf.shape
        std = 1.0 / np.sqrt(np.prod(shape[:-1])) if len(shape) > 1 else 0.3
        return jnp.asarray(rng.normal(0.0, std, shape).astype(np.float32))

    return jax.tree_util.tree_map(draw, params)


def _obs(space, n: int = N_OBS, seed: int = 99) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if space.dtype == np.uint8:
        return rng.integers(0, 256, (n, *space.shape), dtype=np.uint8)
    low = np.where(np.isfinite(space.low), space.low, -3.0)
    high = np.where(np.isfinite(space.high), space.high, 3.0)
    return rng.uniform(low, high, (n, *space.shape)).astype(np.float32)


def _roundtrip(obj):
    """What a ``--save-model`` file holds, as zoo reads it: msgpack_restore(to_bytes(obj))."""
    return flax.serialization.msgpack_restore(flax.serialization.to_bytes(obj))


def _close(name: str, ours: torch.Tensor, theirs) -> None:
    theirs = np.asarray(theirs)
    ours = ours.detach().numpy()
    assert ours.shape == theirs.shape, f"{name}: shape {ours.shape} vs flax {theirs.shape}"
    diff = float(np.max(np.abs(ours - theirs)))
    assert diff <= ATOL, f"{name}: max |diff| {diff:.3g} > {ATOL}"


def _same_argmax(name: str, ours: torch.Tensor, theirs) -> None:
    flax_actions = np.asarray(theirs).argmax(axis=-1)
    assert np.array_equal(ours.argmax(dim=-1).numpy(), flax_actions), f"{name}: argmax differs"


def _as_torch(obs: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(obs)


# ----------------------------------------------------------------------------- parity: Q-networks
Q_CASES = [
    pytest.param("dqn_jax", "CartPole-v1", id="dqn_jax-CartPole"),
    pytest.param("dqn_jax", "Acrobot-v1", id="dqn_jax-Acrobot"),
    pytest.param("dqn_atari_jax", "atari-6", id="dqn_atari_jax-4x84x84"),
    pytest.param("dqn_atari_jax", "atari-4-72x90", id="dqn_atari_jax-4x72x90"),
    pytest.param("qdagger_dqn_atari_jax_impalacnn", "atari-6", id="qdagger-4x84x84"),
    pytest.param("qdagger_dqn_atari_jax_impalacnn", "atari-4-72x90", id="qdagger-4x72x90"),
]


@needs_jax
@pytest.mark.parametrize(("script", "space"), Q_CASES)
def test_dqn_ports_match_flax(script, space):
    obs_space, act_space = SPACES[space]()
    net = _wheel_classes(script)["QNetwork"](action_dim=act_space.n)
    # dqn_jax.py:164 / dqn_atari_jax.py:191 init on the (1, ...) reset obs; qdagger :230 on a batched sample
    params = _scramble(net.init(jax.random.PRNGKey(0), _obs(obs_space, n=1)), seed=1)
    restored = _roundtrip(params)  # dqn_jax.py:263: to_bytes(q_state.params)
    assert fm.flatten_tree(restored).keys() == _file_shapes(script, obs_space, act_space).keys()
    (part,) = _load(script, restored, obs_space, act_space).values()
    cls = type(part)
    assert cls is flaxlayout.port(_entry(script), "q_network")
    obs = _obs(obs_space)
    q_flax = net.apply(params, obs)
    with torch.no_grad():
        q = part(_as_torch(obs))
        _close(script, q, q_flax)
        _same_argmax(script, q, q_flax)
        if obs.dtype == np.uint8:  # zoo's policy feeds float32 frames: same numbers
            torch.testing.assert_close(part(_as_torch(obs).float()), q, rtol=0, atol=0)
        direct = cls.from_flax(restored, obs_space, act_space)
        torch.testing.assert_close(direct(_as_torch(obs)), q, rtol=0, atol=0)


C51_CASES = [
    pytest.param("c51_jax", "CartPole-v1", [], id="c51_jax-CartPole-defaults"),
    pytest.param(
        "c51_jax", "Acrobot-v1", ["--n-atoms", "51", "--v-min", "-10", "--v-max", "10"], id="c51_jax-51"
    ),
    pytest.param("c51_atari_jax", "atari-6", [], id="c51_atari_jax-defaults"),
    pytest.param(
        "c51_atari_jax",
        "atari-4-72x90",
        ["--n-atoms", "21", "--v-min", "-5", "--v-max", "15"],
        id="c51_atari-21",
    ),
]


@needs_jax
@pytest.mark.parametrize(("script", "space", "argv"), C51_CASES)
def test_c51_ports_match_flax(script, space, argv):
    obs_space, act_space = SPACES[space]()
    args = _script_args(script, argv)
    net = _wheel_classes(script)["QNetwork"](action_dim=act_space.n, n_atoms=args["n_atoms"])
    params = _scramble(net.init(jax.random.PRNGKey(0), _obs(obs_space, n=1)), seed=2)
    # c51_jax.py:275-280: {"model_weights": q_state.params, "args": vars(args)}
    restored = _roundtrip({"model_weights": params, "args": args})
    assert restored["args"] == args
    expected = _file_shapes(script, obs_space, act_space, n_atoms=args["n_atoms"])
    assert {k for k in fm.flatten_tree(restored) if not k.startswith("args.")} == expected.keys()
    model = _load(script, restored, obs_space, act_space)["q_network"]
    assert model.n_atoms == args["n_atoms"]
    obs = _obs(obs_space)
    pmfs_flax = net.apply(params, obs)
    # c51_jax_eval.py:34, 41-43: atoms from the saved args, Q = (pmfs * atoms).sum(-1), argmax
    atoms = jnp.asarray(np.linspace(args["v_min"], args["v_max"], num=args["n_atoms"]))
    q_flax = (pmfs_flax * atoms).sum(axis=-1)
    torch.testing.assert_close(model.atoms, torch.tensor(np.asarray(atoms)), rtol=0, atol=0)
    with torch.no_grad():
        pmfs = model.pmfs(_as_torch(obs))
        _close(f"{script} pmfs", pmfs, pmfs_flax)
        # the head alone, on flax's own pmfs
        _close(f"{script} head", model.q_from_pmfs(torch.tensor(np.asarray(pmfs_flax))), q_flax)
        q = model(_as_torch(obs))
        # Q sums pmfs * atoms: the pmfs' float32 rounding differences come back times |atoms| (up to 100)
        amplified = float(np.abs(atoms).max() * np.abs(pmfs.numpy() - np.asarray(pmfs_flax)).sum(-1).max())
        diff = float(np.abs(q.numpy() - np.asarray(q_flax)).max())
        assert diff <= ATOL + amplified, f"{script} Q: max |diff| {diff:.3g} > {ATOL} + {amplified:.3g}"
        _same_argmax(script, q, q_flax)
        direct = type(model).from_flax(
            restored["model_weights"],
            obs_space,
            act_space,
            **{k: args[k] for k in ("n_atoms", "v_min", "v_max")},
        )
        torch.testing.assert_close(direct(_as_torch(obs)), q, rtol=0, atol=0)


# ----------------------------------------------------------------------------- parity: TD3 / DDPG
CONTINUOUS_CASES = [
    pytest.param(script, space, id=f"{script.split('_')[0]}-{space}")
    for script in ("td3_continuous_action_jax", "ddpg_continuous_action_jax")
    for space in ("Pendulum-v1", "box11-act3-asymmetric")
]


@needs_jax
@pytest.mark.parametrize(("script", "space"), CONTINUOUS_CASES)
def test_td3_ddpg_ports_match_flax(script, space):
    obs_space, act_space = SPACES[space]()
    classes = _wheel_classes(script)
    vector_act = gymnasium.vector.utils.batch_space(act_space, 1)  # the scripts' envs.action_space
    actor = classes["Actor"](
        action_dim=np.prod(act_space.shape),
        action_scale=jnp.array((vector_act.high - vector_act.low) / 2.0),
        action_bias=jnp.array((vector_act.high + vector_act.low) / 2.0),
    )  # td3 1.2.0 :160-163
    qf = classes["QNetwork"]()
    key = jax.random.PRNGKey(1)
    key, actor_key, qf1_key, qf2_key = jax.random.split(key, 4)
    obs1, act1 = _obs(obs_space, n=1), vector_act.sample()
    saved = [_scramble(actor.init(actor_key, obs1), seed=3), _scramble(qf.init(qf1_key, obs1, act1), seed=4)]
    if script.startswith("td3"):
        saved.append(_scramble(qf.init(qf2_key, obs1, act1), seed=5))
    restored = _roundtrip(saved)  # upstream: to_bytes([actor_state.params, qf1_state.params(, qf2)])
    assert fm.flatten_tree(restored).keys() == _file_shapes(script, obs_space, act_space).keys()
    modules = _load(script, restored, obs_space, act_space)
    assert list(modules) == ["actor", "qf1", "qf2"][: len(saved)]
    obs = _obs(obs_space)
    acts = _obs(act_space, seed=7)
    with torch.no_grad():
        action = modules["actor"](_as_torch(obs))
        _close(f"{script} actor", action, actor.apply(saved[0], obs))
        low, high = torch.from_numpy(act_space.low), torch.from_numpy(act_space.high)
        assert ((action >= low - 1e-5) & (action <= high + 1e-5)).all()
        np.testing.assert_array_equal(
            modules["actor"].action_scale.numpy(), np.asarray(actor.action_scale, dtype=np.float32)
        )
        np.testing.assert_array_equal(
            modules["actor"].action_bias.numpy(), np.asarray(actor.action_bias, dtype=np.float32)
        )
        for i, part in enumerate(list(modules)[1:], start=1):
            _close(
                f"{script} {part}",
                modules[part](_as_torch(obs), _as_torch(acts)),
                qf.apply(saved[i], obs, acts),
            )
        direct = fm.JaxDeterministicActor.from_flax(restored["0"], obs_space, act_space)
        torch.testing.assert_close(direct(_as_torch(obs)), action, rtol=0, atol=0)


# ----------------------------------------------------------------------------- parity: PPO
@needs_jax
def test_ppo_envpool_port_matches_flax():
    script = PPO
    obs_space, act_space = SPACES["atari-6"]()
    classes = _wheel_classes(script)
    network, actor, critic = (
        classes["Network"](),
        classes["Actor"](action_dim=act_space.n),
        classes["Critic"](),
    )
    key = jax.random.PRNGKey(1)
    key, network_key, actor_key, critic_key = jax.random.split(key, 4)
    sample = _obs(obs_space, n=1)  # :257 np.array([envs.single_observation_space.sample()])
    network_params = _scramble(network.init(network_key, sample), seed=6)
    hidden1 = network.apply(network_params, sample)
    actor_params = _scramble(actor.init(actor_key, hidden1), seed=7)
    critic_params = _scramble(critic.init(critic_key, hidden1), seed=8)
    args = _script_args(script, ["--env-id", "Breakout-v5"])
    # :477-491 to_bytes([vars(args), [network_params, actor_params, critic_params]])
    restored = _roundtrip([args, [network_params, actor_params, critic_params]])
    assert restored["0"] == args
    assert {k for k in fm.flatten_tree(restored) if not k.startswith("0.")} == _file_shapes(
        script, obs_space, act_space
    ).keys()
    agent = _load(script, restored, obs_space, act_space)["agent"]
    assert _saved_args(script, restored)["env_id"] == "Breakout-v5"
    obs = _obs(obs_space)
    hidden = network.apply(network_params, obs)
    logits_flax, value_flax = actor.apply(actor_params, hidden), critic.apply(critic_params, hidden)
    with torch.no_grad():
        logits, value = agent(_as_torch(obs)), agent.value(_as_torch(obs))
        _close("PPO hidden", agent.hidden(_as_torch(obs)), hidden)
        _close("PPO logits", logits, logits_flax)
        _close("PPO value", value, value_flax)
        _same_argmax("PPO logits", logits, logits_flax)
        assert torch.equal(agent.act(_as_torch(obs)), logits.argmax(1))
        direct = fm.PPOAtariJaxAgent.from_flax(restored["1"], obs_space, act_space)
        torch.testing.assert_close(direct(_as_torch(obs)), logits, rtol=0, atol=0)


# ----------------------------------------------------------------------------- shapes (no jax)
def test_expected_shapes_of_the_atari_networks():
    obs_space, act_space = SPACES["atari-6"]()
    dqn = _file_shapes("dqn_atari_jax", obs_space, act_space)
    assert dqn["params.Conv_0.kernel"] == (8, 8, 4, 32)  # HWIO
    assert dqn["params.Dense_0.kernel"] == (3136, 512)  # 64 * 7 * 7, in flax's (in, out)
    assert dqn["params.Dense_1.kernel"] == (512, 6)
    qdagger = _file_shapes("qdagger_dqn_atari_jax_impalacnn", obs_space, act_space)
    assert len(qdagger) == 3 * 10 + 4
    assert qdagger["params.ConvSequence_2.ResidualBlock_1.Conv_1.kernel"] == (3, 3, 32, 32)
    assert qdagger["params.Dense_0.kernel"] == (32 * 11 * 11, 256)  # 84 -> 42 -> 21 -> 11
    c51 = _file_shapes("c51_atari_jax", obs_space, act_space)
    assert c51["model_weights.params.Dense_1.kernel"] == (512, 6 * 51)  # the script's default n_atoms
    assert _file_shapes("c51_jax", *SPACES["CartPole-v1"]())["model_weights.params.Dense_2.kernel"] == (
        84,
        202,
    )
    agent = fm.PPOAtariJaxAgent.flax_shapes(obs_space, act_space)  # [network, actor, critic] params
    assert agent["0.params.Dense_0.kernel"] == (3136, 512)
    assert agent["1.params.Dense_0.kernel"] == (512, 6) and agent["2.params.Dense_0.kernel"] == (512, 1)
    td3 = _file_shapes("td3_continuous_action_jax", *SPACES["Pendulum-v1"]())
    assert td3["0.params.Dense_0.kernel"] == (3, 256) and td3["0.params.Dense_2.kernel"] == (256, 1)
    assert td3["1.params.Dense_0.kernel"] == (3 + 1, 256) and "2.params.Dense_2.bias" in td3
    assert not any(
        k.startswith("2.") for k in _file_shapes("ddpg_continuous_action_jax", *SPACES["Pendulum-v1"]())
    )


def test_expected_shapes_of_the_ppo_file():
    # [vars(args), [network, actor, critic]]: the agent's params under "1."
    ppo = _file_shapes(PPO, *SPACES["atari-6"]())
    assert ppo["1.0.params.Dense_0.kernel"] == (3136, 512)
    assert ppo["1.1.params.Dense_0.kernel"] == (512, 6) and ppo["1.2.params.Dense_0.kernel"] == (512, 1)
    assert not any(k.startswith("0.") for k in ppo)  # the saved args hold no params


def test_same_padding_of_the_max_pool_is_lax_s():
    # lax "SAME": output ceil(n/2), the odd pad after, unlike torch's symmetric padding=1
    assert fm._same_pads(84, 3, 2) == (0, 1, 42)
    assert fm._same_pads(42, 3, 2) == (0, 1, 21)
    assert fm._same_pads(21, 3, 2) == (1, 1, 11)


def test_every_saving_script_has_a_port():
    assert _flax_scripts() == {
        "dqn_jax",
        "dqn_atari_jax",
        "c51_jax",
        "c51_atari_jax",
        "qdagger_dqn_atari_jax_impalacnn",
        "td3_continuous_action_jax",
        "ddpg_continuous_action_jax",
        "ppo_atari_envpool_xla_jax_scan",
    }
    for script in _flax_scripts():
        entry = _entry(script)
        for part in entry.parts:
            assert issubclass(flaxlayout.port(entry, part), fm.FlaxPort), (script, part)


# ----------------------------------------------------------------------------- mismatches (no jax)
def _tree(shapes: dict[str, tuple], extra: dict | None = None) -> dict:
    """A restored-file-like nested dict of zero arrays with these dotted keys."""
    tree: dict = {}
    for key, value in {**{k: np.zeros(s, np.float32) for k, s in shapes.items()}, **(extra or {})}.items():
        *path, leaf = key.split(".")
        node = tree
        for part in path:
            node = node.setdefault(part, {})
        node[leaf] = value
    return tree


def _mismatch(script, tree, spaces="CartPole-v1") -> str:
    with pytest.raises(LayoutMismatch) as info:
        _load(script, tree, *SPACES[spaces]())
    message = str(info.value)
    assert "\n" not in message
    return message


def test_a_sound_tree_loads_without_jax():
    obs_space, act_space = SPACES["CartPole-v1"]()
    shapes = _file_shapes("dqn_jax", obs_space, act_space)
    model = _load("dqn_jax", _tree(shapes), obs_space, act_space)["q_network"]
    assert [k for k in model.state_dict()] == [
        "Dense_0.weight",
        "Dense_0.bias",
        "Dense_1.weight",
        "Dense_1.bias",
        "Dense_2.weight",
        "Dense_2.bias",
    ]
    assert model.Dense_0.weight.shape == (120, 4)  # kernel (4, 120) transposed


def test_mismatches_name_the_first_key_that_differs():
    cartpole = SPACES["CartPole-v1"]()
    shapes = _file_shapes("dqn_jax", *cartpole)
    # trained on a 3-action env
    wrong_n = _file_shapes("dqn_jax", cartpole[0], gymnasium.spaces.Discrete(3))
    message = _mismatch("dqn_jax", _tree(wrong_n))
    assert "params.Dense_2.kernel is (84, 3) in the file, the env needs (84, 2)" in message
    assert message.endswith("(+1 more)")  # Dense_2.bias differs too; the first difference is named
    # a torch-layout (out, in) kernel
    transposed = {**shapes, "params.Dense_0.kernel": (120, 4)}
    assert "params.Dense_0.kernel is (120, 4) in the file, the env needs (4, 120)" in _mismatch(
        "dqn_jax", _tree(transposed)
    )
    missing = {k: v for k, v in shapes.items() if k != "params.Dense_1.bias"}
    assert "missing params.Dense_1.bias" in _mismatch("dqn_jax", _tree(missing))
    extra = _tree(shapes, {"params.Dense_3.kernel": np.zeros((2, 2), np.float32)})
    assert "unexpected params.Dense_3.kernel" in _mismatch("dqn_jax", extra)
    as_ints = _tree(shapes, {"params.Dense_0.bias": np.zeros(120, np.int32)})
    assert "params.Dense_0.bias has dtype int32" in _mismatch("dqn_jax", as_ints)
    # a leaf that is no array is no param: the file lacks that param
    not_array = _tree(shapes, {"params.Dense_0.bias": "oops"})
    assert "missing params.Dense_0.bias" in _mismatch("dqn_jax", not_array)
    # the per-network constructor says the same
    with pytest.raises(LayoutMismatch, match=r"params\.Dense_2\.kernel has shape \(84, 3\)"):
        fm.DQNJaxQNetwork.from_flax(_tree(wrong_n), *cartpole)
    with pytest.raises(LayoutMismatch, match=r"params\.Dense_0\.bias is a str"):
        fm.DQNJaxQNetwork.from_flax(not_array, *cartpole)


def test_file_structure_mismatches():
    cartpole = SPACES["CartPole-v1"]()
    dqn_file = _tree(_file_shapes("dqn_jax", *cartpole))
    assert "no 'model_weights' in the file" in _mismatch("c51_jax", dqn_file)
    c51_shapes = _file_shapes("c51_jax", *cartpole, n_atoms=51)
    assert "no 'args' in the file" in _mismatch("c51_jax", _tree(c51_shapes))
    no_atoms = _tree(c51_shapes, {"args.v_min": -10.0, "args.v_max": 10.0})
    assert "lacks n_atoms in its saved args" in _mismatch("c51_jax", no_atoms)
    # the file's own n_atoms decides the shapes: 51 atoms saved, 101 in the args -> the kernel differs
    wrong_atoms = _tree(c51_shapes, {"args.n_atoms": 101, "args.v_min": -10.0, "args.v_max": 10.0})
    assert "params.Dense_2.kernel is (84, 102) in the file, the env needs (84, 202)" in _mismatch(
        "c51_jax", wrong_atoms
    )
    right = _tree(c51_shapes, {"args.n_atoms": 51, "args.v_min": -10.0, "args.v_max": 10.0})
    assert _saved_args("c51_jax", right) == {"n_atoms": 51, "v_min": -10.0, "v_max": 10.0}
    model = _load("c51_jax", right, *cartpole)["q_network"]
    assert model.n_atoms == 51 and float(model.atoms[0]) == -10.0 and float(model.atoms[-1]) == 10.0
    # a DQN file read as TD3's [actor, qf1, qf2]
    assert "no '0' in the file" in _mismatch("td3_continuous_action_jax", dqn_file, "Pendulum-v1")
    # DDPG's [actor, qf1] read as TD3's: no qf2
    ddpg_file = _tree(_file_shapes("ddpg_continuous_action_jax", *SPACES["Pendulum-v1"]()))
    assert "no '2' in the file" in _mismatch("td3_continuous_action_jax", ddpg_file, "Pendulum-v1")
    # of several parts, the one that differs is named
    pendulum = SPACES["Pendulum-v1"]()
    td3_shapes = _file_shapes("td3_continuous_action_jax", *pendulum)
    qf1_for_11_obs_3_act = fm.JaxContinuousQNetwork.flax_shapes(*SPACES["box11-act3-asymmetric"]())
    td3_wrong_qf1 = _tree(
        {k: v for k, v in td3_shapes.items() if not k.startswith("1.")}
        | {"1." + k: v for k, v in qf1_for_11_obs_3_act.items()}
    )
    message = _mismatch("td3_continuous_action_jax", td3_wrong_qf1, "Pendulum-v1")
    assert " in qf1: params.Dense_0.kernel is (14, 256) in the file, the env needs (4, 256)" in message
    assert "files hold a tree of params, this one holds a ndarray" in _mismatch("dqn_jax", np.zeros(3))


def test_unsupported_scripts_and_spaces():
    cartpole = SPACES["CartPole-v1"]()
    with pytest.raises(ZooError, match="unknown experiment"):
        _entry("sac_continuous_action_jax")
    with pytest.raises(ZooError, match="unknown experiment"):
        _file_shapes("sac_continuous_action_jax", *cartpole)
    with pytest.raises(UnsupportedError, match="Discrete action space"):
        _file_shapes("dqn_jax", *SPACES["Pendulum-v1"]())
    with pytest.raises(UnsupportedError, match=r"\(C, H, W\) image observations"):
        _file_shapes("dqn_atari_jax", *cartpole)
    with pytest.raises(UnsupportedError, match="Box action space"):
        _file_shapes("td3_continuous_action_jax", *cartpole)
