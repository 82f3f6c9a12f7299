"""Reading flax msgpack files (``flax.serialization.to_bytes``) without jax or flax.

The oracle is flax itself: every well-formed file here is written by ``flax.serialization.to_bytes`` (or
``msgpack_serialize``), and ``read_flax_file`` must give exactly what ``flax.serialization.msgpack_restore``
gives. Those tests skip where flax is not installed; the refusals (crafted msgpack, built with the
``msgpack`` library the way flax's writer lays it out) run everywhere.
"""

from __future__ import annotations

import os
import random
import struct
import subprocess
import sys
from pathlib import Path

import msgpack
import numpy as np
import pytest
from helpers import hang_guard, holding_little

from zoo.artifacts import flaxfile
from zoo.artifacts.flaxfile import (
    MAX_CONTAINER_LEN,
    MAX_DEPTH,
    MAX_FLAX_BYTES,
    as_sequence,
    read_flax_bytes,
    read_flax_file,
    refuse_broken,
    tensor_shapes,
)
from zoo.errors import BrokenFile

ROOT = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------------------------------------- flax's layout
def ext_array(arr: np.ndarray, code: int = 1) -> msgpack.ExtType:
    """An array as flax's ``_msgpack_ext_pack`` writes it (type 1; type 3 for a numpy scalar)."""
    payload = msgpack.packb((arr.shape, arr.dtype.name, arr.tobytes("C")), use_bin_type=True)
    return msgpack.ExtType(code, payload)


def ext_raw(shape, name, buffer, code: int = 1) -> msgpack.ExtType:
    return msgpack.ExtType(code, msgpack.packb((shape, name, buffer), use_bin_type=True))


def pack(tree) -> bytes:
    """msgpack of a tree whose leaves are already ExtTypes (the crafted files' writer)."""
    return msgpack.packb(tree, use_bin_type=True)


def params_bytes() -> bytes:
    """A small state dict laid out as flax writes one, built without flax."""
    rng = np.random.default_rng(0)
    kernel, bias = rng.standard_normal((4, 2)).astype(np.float32), np.zeros(2, np.float32)
    return pack({"params": {"Dense_0": {"kernel": ext_array(kernel), "bias": ext_array(bias)}}})


def read(tmp_path: Path, data: bytes, name: str = "model.cleanrl_model"):
    path = tmp_path / name
    path.write_bytes(data)
    with hang_guard():  # a crafted file that stalls the reader fails here; speed is benchmarks/' business
        return read_flax_file(path)


def assert_refused(info, kind: str, *words: str) -> None:
    """One clear problem: the kind, the words, one line, no content, and refuse_broken raises it."""
    assert info.kind == kind, (info.kind, info.problem)
    assert info.problem and "\n" not in info.problem and len(info.problem) < 200, info.problem
    for word in words:
        assert word in info.problem, (word, info.problem)
    assert info.content is None and not info.decoded
    with pytest.raises(BrokenFile) as raised:
        refuse_broken(info)
    assert raised.value.exit_code == 1 and "\n" not in str(raised.value)


# ---------------------------------------------------------------------------------------------- real flax files
@pytest.fixture(scope="module")
def flax_mods():
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    serialization = pytest.importorskip("flax.serialization")
    import jax
    import jax.numpy as jnp
    from flax import linen as nn

    return serialization, jax, jnp, nn


@pytest.fixture(scope="module")
def networks(flax_mods):
    return _networks(flax_mods)


def _networks(flax_mods):
    """Params of CleanRL-shaped flax modules: a Q-network, an Atari torso, actor and critic heads."""
    _, jax, jnp, nn = flax_mods

    class QNetwork(nn.Module):  # dqn_jax.py's
        n: int

        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.Dense(120)(x))
            x = nn.relu(nn.Dense(84)(x))
            return nn.Dense(self.n)(x)

    class Torso(nn.Module):  # ppo_atari_envpool_async_jax's Network, shrunk
        @nn.compact
        def __call__(self, x):
            x = nn.Conv(8, (4, 4), strides=(2, 2), padding="VALID")(x)
            x = nn.relu(x).reshape((x.shape[0], -1))
            return nn.Dense(16)(x)

    rng = np.random.default_rng(0)

    def init(module, *shape):
        """The module's params tree (names, shapes, dtypes, as ``init`` makes them) holding random jax arrays:
        ``eval_shape`` traces ``init`` without compiling its initializers (seconds on a CPU)."""
        tree = jax.eval_shape(module.init, jax.random.PRNGKey(0), jnp.zeros(shape))
        return jax.tree_util.tree_map(
            lambda s: jnp.asarray(rng.standard_normal(s.shape).astype(s.dtype)), tree
        )

    q, torso = init(QNetwork(2), 1, 4), init(Torso(), 1, 12, 12, 4)
    actor, critic = init(QNetwork(3), 1, 16), init(QNetwork(1), 1, 16)
    return q, torso, actor, critic


ARGS = {
    "exp_name": "c51_jax",
    "seed": 1,
    "env_id": "CartPole-v1",
    "learning_rate": 2.5e-4,
    "track": False,
    "wandb_entity": None,
    "n_atoms": 101,
    "hidden": [64, 64],
    "pair": (1, 2.5),
    "gamma": np.float32(0.99),
}


def _leaves(flax_mods) -> dict:
    """Every dtype, shape and scalar flax writes."""
    _, _, jnp, _ = flax_mods
    rng = np.random.default_rng(1)
    arrays = {name: rng.standard_normal((3, 5)).astype(name) for name in ("float16", "float32", "float64")}
    arrays |= {
        name: rng.integers(-100, 100, (2, 3, 4)).astype(name) for name in ("int8", "int16", "int32", "int64")
    }
    arrays |= {
        name: rng.integers(0, 200, (7,)).astype(name) for name in ("uint8", "uint16", "uint32", "uint64")
    }
    arrays |= {
        "bool": rng.random((4, 4)) > 0.5,
        "complex64": (rng.standard_normal(3) + 1j).astype(np.complex64),
        "complex128": rng.standard_normal(2) * 1j,
        "empty": np.zeros((0, 3), np.float32),
        "zero_d": np.array(7.5, np.float32),
        "nan": np.array([np.nan, np.inf, -0.0], np.float32),
        "fortran": np.asfortranarray(rng.standard_normal((3, 4)).astype(np.float32)),
        "bfloat16": jnp.arange(6, dtype=jnp.bfloat16).reshape(2, 3),
        "jax_f32": jnp.ones((2, 2)),
    }
    scalars = {
        "np_f32": np.float32(1.5),
        "np_i64": np.int64(-3),
        "np_bool": np.bool_(True),
        "np_f16": np.float16(0.25),
        "np_c64": np.complex64(1 - 2j),
        "py_complex": 3 + 4j,
        "py": [1, -(2**40), 2.5, "text", b"bytes", None, True],
    }
    return {"arrays": arrays, "scalars": scalars}


@pytest.fixture(scope="module")
def cases(flax_mods, networks) -> dict:
    """What CleanRL's JAX scripts save, and every leaf type flax writes."""
    q, torso, actor, critic = networks
    return {
        "dqn": q,  # q_state.params
        "c51": [ARGS, q],  # [vars(args), q_state.params]
        "td3": [actor, critic, critic],  # [actor_params, qf1_params, qf2_params]
        "ppo_envpool": [ARGS, [torso, actor, critic]],  # [vars(args), [network, actor, critic]]
        "leaves": _leaves(flax_mods),
        "bare_array": np.arange(12, dtype=np.float32).reshape(3, 4),
        "bare_scalar": np.float32(2.0),
    }


def assert_same(ours, theirs, where: str = "") -> None:
    """Exactly what msgpack_restore gives: the same containers, keys, dtypes, shapes and values."""
    assert type(ours) is type(theirs), (where, type(ours), type(theirs))
    if isinstance(theirs, dict):
        assert list(ours) == list(theirs), where
        for key in theirs:
            assert_same(ours[key], theirs[key], f"{where}.{key}")
    elif isinstance(theirs, list):
        assert len(ours) == len(theirs), where
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            assert_same(a, b, f"{where}[{i}]")
    elif isinstance(theirs, np.ndarray | np.generic):
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, where
        assert ours.tobytes() == theirs.tobytes(), where  # bit for bit: NaNs, -0.0, bfloat16
        assert np.array_equal(np.asarray(ours), np.asarray(theirs), equal_nan=ours.dtype.kind in "fc"), where
    else:
        assert ours == theirs, where


@pytest.mark.parametrize("case", ["dqn", "c51", "td3", "ppo_envpool", "leaves", "bare_array", "bare_scalar"])
def test_reads_what_flax_restores(flax_mods, cases, tmp_path, case):
    serialization = flax_mods[0]
    data = serialization.to_bytes(cases[case])
    info = read(tmp_path, data)
    assert info.kind == "flax-msgpack" and info.decoded and info.problem is None, info.problem
    assert info.size == len(data)
    assert_same(info.content, serialization.msgpack_restore(data))


def test_lists_come_back_as_flax_writes_them(flax_mods, networks, tmp_path):
    serialization = flax_mods[0]
    q = networks[0]
    content = read(tmp_path, serialization.to_bytes([ARGS, q])).content
    assert set(content) == {"0", "1"} and content["0"]["hidden"] == {"0": 64, "1": 64}
    args, params = as_sequence(content)
    assert (
        args["env_id"] == "CartPole-v1" and args["wandb_entity"] is None and args["gamma"] == np.float32(0.99)
    )
    assert as_sequence(args["pair"]) == [1, 2.5] and as_sequence(args) is None
    assert tensor_shapes(params) == {
        "params.Dense_0.kernel": (4, 120),
        "params.Dense_0.bias": (120,),
        "params.Dense_1.kernel": (120, 84),
        "params.Dense_1.bias": (84,),
        "params.Dense_2.kernel": (84, 2),
        "params.Dense_2.bias": (2,),
    }
    shapes = tensor_shapes(content)
    assert shapes["1.params.Dense_2.kernel"] == (84, 2) and not any(k.startswith("0.") for k in shapes)


def test_train_state_with_optimizer(flax_mods, networks, tmp_path):
    """A whole TrainState (step, params, optax's Adam state of namedtuples); apply_fn and tx are not written."""
    serialization, jax, jnp, _ = flax_mods
    optax = pytest.importorskip("optax")
    from flax.training.train_state import TrainState

    q = networks[0]
    state = TrainState.create(apply_fn=lambda *a: None, params=q, tx=optax.adam(1e-3))
    data = serialization.to_bytes(state)
    info = read(tmp_path, data)
    assert_same(info.content, serialization.msgpack_restore(data))
    assert info.content["step"] == 0 and set(info.content["opt_state"]) == {"0", "1"}
    assert serialization.from_bytes(state, data).step == 0


def test_msgpack_serialize_list(flax_mods, tmp_path):
    """``msgpack_serialize`` keeps a top-level list a msgpack array (``to_bytes`` turns it into a dict)."""
    serialization = flax_mods[0]
    data = serialization.msgpack_serialize([np.ones(3, np.float32), {"a": np.int32(2)}, [1, "x"]])
    info = read(tmp_path, data)
    assert isinstance(info.content, list)
    assert_same(info.content, serialization.msgpack_restore(data))


@pytest.mark.parametrize("top", [False, True])
def test_chunked_arrays_are_reassembled(flax_mods, tmp_path, monkeypatch, top):
    """flax chunks arrays over MAX_CHUNK_SIZE (1 GiB); the same code path, with the threshold lowered."""
    serialization = flax_mods[0]
    monkeypatch.setattr(serialization, "MAX_CHUNK_SIZE", 64)
    rng = np.random.default_rng(2)
    big = rng.standard_normal((7, 11, 3)).astype(np.float32)  # 924 bytes: 15 chunks of 16 floats
    tree = (
        big
        if top
        else {
            "params": {
                "Embed_0": {"embedding": big, "small": np.ones(3, np.float32)},
                "ints": np.arange(40, dtype=np.int64),
            }
        }
    )
    data = serialization.to_bytes(tree)
    assert flaxfile.CHUNKED.encode() in data
    info = read(tmp_path, data)
    assert info.decoded, info.problem
    assert_same(info.content, serialization.msgpack_restore(data))
    got = info.content if top else info.content["params"]["Embed_0"]["embedding"]
    assert np.array_equal(got, big) and got.flags.c_contiguous


def test_every_prefix_of_a_flax_file_is_truncated(flax_mods, cases):
    serialization = flax_mods[0]
    data = serialization.to_bytes(cases["c51"])
    cuts = {*range(1, 600), *range(600, len(data), len(data) // 700), *range(len(data) - 600, len(data))}
    with hang_guard():
        for cut in sorted(cuts):
            info = read_flax_bytes(data[:cut], Path("cut"))
            assert info.kind == "truncated" and info.problem == "msgpack data is cut short", (
                cut,
                info.problem,
            )


def test_flipped_bytes_never_crash(flax_mods, cases):
    serialization = flax_mods[0]
    data = serialization.to_bytes(cases["ppo_envpool"])
    rng = random.Random(0)
    for _ in range(2000):
        mutated = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            mutated[rng.randrange(len(mutated))] = rng.randrange(256)
        info = read_flax_bytes(bytes(mutated), Path("flipped"))
        assert info.decoded or (info.problem and "\n" not in info.problem and info.content is None)


# ---------------------------------------------------------------------------------------------- without flax
def test_crafted_params_read_and_load(tmp_path):
    info = read(tmp_path, params_bytes())
    assert info.decoded and info.kind == "flax-msgpack"
    kernel = info.content["params"]["Dense_0"]["kernel"]
    assert kernel.dtype == np.float32 and kernel.shape == (4, 2) and not kernel.flags.writeable
    assert tensor_shapes(info.content) == {"params.Dense_0.kernel": (4, 2), "params.Dense_0.bias": (2,)}
    assert tensor_shapes(info.content["params"], prefix="q") == {
        "q.Dense_0.kernel": (4, 2),
        "q.Dense_0.bias": (2,),
    }
    refuse_broken(info)  # a sound file: nothing to refuse


def test_empty_missing_and_unreadable(tmp_path):
    assert_refused(read(tmp_path, b""), "empty", "empty")
    assert_refused(read_flax_file(tmp_path / "nope.cleanrl_model"), "missing", "not found")
    info = read_flax_file(tmp_path)
    assert_refused(info, "unreadable", "not a regular file")
    with pytest.raises(BrokenFile, match="cannot read"):
        refuse_broken(info)


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"PK\x03\x04" + bytes(40), ["zip archive", "torch.save"]),
        (b"\x80\x04\x95" + bytes(20), ["pickle (protocol 4)"]),
        (b'{"params": {}}', ["not flax msgpack", "0x7b"]),
        (b"\x05", ["not flax msgpack"]),
    ],
)
def test_not_msgpack(tmp_path, data, words):
    assert_refused(read(tmp_path, data), "not-msgpack", *words)


def test_torch_file_is_not_flax(tmp_path):
    torch = pytest.importorskip("torch")
    torch.save({"w": torch.zeros(2)}, tmp_path / "t.pt")
    assert_refused(read_flax_file(tmp_path / "t.pt"), "not-msgpack", "zip archive")


def test_random_bytes_never_crash():
    rng = random.Random(1)
    with hang_guard():
        for i in range(3000):
            data = bytes(rng.randrange(256) for _ in range(rng.randint(1, 300)))
            if i % 2:  # half of them start as a flax file does, so msgpack gets to decode them
                data = (
                    bytes([rng.choice([0x81, 0x82, 0x8F, 0xDE, 0xDF, 0x93, 0xDC, 0xDD, 0xC7, 0xD8])]) + data
                )
            info = read_flax_bytes(data, Path("random"))
            assert info.decoded or (info.problem and "\n" not in info.problem and info.content is None), info


def test_trailing_bytes(tmp_path):
    assert_refused(
        read(tmp_path, params_bytes() + b"\x00"), "flax-msgpack", "1 trailing byte after the top object"
    )
    assert_refused(read(tmp_path, params_bytes() * 2), "flax-msgpack", "trailing bytes")


@pytest.mark.parametrize(
    ("tree", "words"),
    [
        ({"a": msgpack.ExtType(42, b"\x00\x01")}, ["extension type 42", "flax does not write"]),
        ({"a": msgpack.Timestamp(1)}, ["timestamp"]),
        ({"a": ext_raw([3], "float32", bytes(8))}, ["float32 array of shape (3,) holds 8 bytes", "needs 12"]),
        ({"a": ext_raw([2, 2], "int64", bytes(33))}, ["holds 33 bytes", "needs 32"]),
        ({"a": ext_raw([4], "object", bytes(32))}, ["dtype 'object'", "not a numeric dtype"]),
        ({"a": ext_raw([1], "str96", bytes(12))}, ["dtype 'str96'"]),
        ({"a": ext_raw([1], "float128", bytes(16))}, ["dtype 'float128'"]),
        ({"a": ext_raw([1], "V8", bytes(8))}, ["dtype 'V8'"]),
        ({"a": ext_raw([-1], "float32", b"")}, ["not non-negative integers"]),
        ({"a": ext_raw([True], "float32", bytes(4))}, ["not non-negative integers"]),
        ({"a": ext_raw([0, 2**62, 2**62], "float32", b"")}, ["array is too big"]),
        ({"a": ext_raw([1] * 65, "float32", bytes(4))}, ["exceeds max_array_len", "not flax's"]),
        ({"a": msgpack.ExtType(1, pack([[2], "float32"]))}, ["not flax's (shape, dtype, bytes) triple"]),
        ({"a": msgpack.ExtType(1, b"\xc1")}, ["payload is not flax's"]),
        ({"a": msgpack.ExtType(1, pack({"shape": [1]}))}, ["payload is not flax's"]),
        ({"a": msgpack.ExtType(1, pack([[1], "float32", bytes(4)]) + b"\x00")}, ["payload is not flax's"]),
        (
            {"a": ext_raw([2], "float32", bytes(8), code=3)},
            ["numpy scalar extension holds an array of shape (2,)"],
        ),
        ({"a": msgpack.ExtType(2, pack([1.0]))}, ["complex extension is not flax's"]),
        ({"a": msgpack.ExtType(2, pack(["1", 2.0]))}, ["complex extension is not flax's"]),
    ],
)
def test_bad_extensions(tmp_path, tree, words):
    info = read(tmp_path, pack(tree))
    assert_refused(info, "flax-msgpack", *words)


def test_good_extensions_without_flax(tmp_path):
    pytest.importorskip(
        "ml_dtypes"
    )  # imported on the first narrow dtype: its import time is not the reader's
    tree = {
        "s": ext_raw([], "float32", np.float32(2.5).tobytes(), code=3),
        "c": msgpack.ExtType(2, pack([1.0, -2.0])),
        "b16": ext_raw([2], "bfloat16", b"\x80?\x00@"),
        "i4": ext_raw([2], "int4", b"\x01\x07"),
    }
    content = read(tmp_path, pack(tree)).content
    assert type(content["s"]) is np.float32 and content["s"] == 2.5 and content["c"] == 1 - 2j
    assert content["b16"].dtype.name == "bfloat16" and content["b16"].astype(np.float32).tolist() == [
        1.0,
        2.0,
    ]
    assert content["i4"].dtype.name == "int4" and content["i4"].astype(np.int8).tolist() == [1, 7]


def test_bad_keys_and_strings(tmp_path):
    assert_refused(read(tmp_path, b"\x81\xa2\xff\xfe\x01"), "flax-msgpack", "not UTF-8")
    assert_refused(read(tmp_path, b"\x81\x91\x01\x01"), "flax-msgpack", "map key", "unhashable")
    assert_refused(
        read(tmp_path, pack({"a": {msgpack.Timestamp(1): 1}})), "flax-msgpack", "map key of type Timestamp"
    )
    assert_refused(read(tmp_path, b"\x81\xa1a\xc1"), "flax-msgpack", "not valid msgpack")
    assert_refused(read(tmp_path, b"\x81\xa1a\xd4\xfb\x00"), "flax-msgpack", "extension type -5")  # reserved
    assert_refused(
        read(tmp_path, b"\x81\xa1a\xd4\xff\x00"), "flax-msgpack", "not valid msgpack"
    )  # bad timestamp


def test_malformed_chunked_arrays(tmp_path):
    def chunked(shape, chunks, **extra):
        return {
            flaxfile.CHUNKED: True,
            "shape": {str(i): d for i, d in enumerate(shape)},
            "chunks": {str(i): ext_array(c) for i, c in enumerate(chunks)},
            **extra,
        }

    ones = np.ones(4, np.float32)
    good = read(tmp_path, pack({"w": chunked([2, 4], [ones, ones * 2])})).content["w"]
    assert good.shape == (2, 4) and good[1].tolist() == [2.0] * 4
    cases = [
        (chunked([3, 4], [ones, ones]), "holds 8 elements, its shape needs 12"),
        (chunked([8], [ones, ones.astype(np.float16)]), "differ in dtype"),
        (chunked([8], [ones.reshape(2, 2), ones]), "not 1-D arrays"),
        (chunked([4], []), "not a dict keyed"),
        (chunked([4], [ones], extra=1), "not laid out as flax writes it"),
        (
            {flaxfile.CHUNKED: True, "shape": {"1": 4}, "chunks": {"0": ext_array(ones)}},
            "shape is not a dict keyed",
        ),
        (
            {flaxfile.CHUNKED: True, "shape": [4], "chunks": {"0": ext_array(ones)}},
            "shape is not a dict keyed",
        ),
        ({flaxfile.CHUNKED: 1, "shape": {"0": 4}, "chunks": {"0": ext_array(ones)}}, "not laid out"),
        ({flaxfile.CHUNKED: True, "shape": {"0": -4}, "chunks": {"0": ext_array(ones)}}, "non-negative"),
        ({flaxfile.CHUNKED: True, "shape": {"0": 4}, "chunks": {"0": 5}}, "not 1-D arrays"),
    ]
    for tree, words in cases:
        assert_refused(read(tmp_path, pack({"params": {"w": tree}})), "flax-msgpack", words)


def test_deep_nesting(tmp_path):
    def nested(depth: int) -> bytes:
        return b"\x81\xa1k" * depth + b"\xc0"

    assert read(tmp_path, nested(MAX_DEPTH)).decoded
    for depth in (MAX_DEPTH + 1, 1000, 5000, 200_000):
        assert_refused(
            read(tmp_path, nested(depth)), "flax-msgpack", f"nested more than {MAX_DEPTH} levels deep"
        )
    assert_refused(read(tmp_path, b"\x91" * 100_000 + b"\xc0"), "flax-msgpack", "nested more than")


@pytest.mark.parametrize(
    ("data", "kind", "words"),
    [
        (
            b"\xdf\xff\xff\xff\xff",
            "flax-msgpack",
            ["map of 4294967295 entries", f"bound of {MAX_CONTAINER_LEN}"],
        ),
        (b"\xdd\xff\xff\xff\xff" + b"\xc0" * 64, "flax-msgpack", ["array of 4294967295 items"]),
        (b"\x81\xa1a\xdd\x7f\xff\xff\xff", "flax-msgpack", ["array of 2147483647 items"]),
        (b"\x81\xa1a\xde\xff\xff", "flax-msgpack", ["map of 65535 entries"]),
        (
            b"\x81\xa1a\xc9\xff\xff\xff\xff\x01",
            "flax-msgpack",
            ["msgpack extension", "over zoo's bound of 2147483648"],
        ),
        (
            b"\x81\xa1a" + msgpack.packb(msgpack.ExtType(1, b"\x93\xdd\xff\xff\xff\xff")),
            "flax-msgpack",
            ["payload is not flax's", "exceeds max_array_len"],
        ),
    ],
)
def test_msgpack_bombs(tmp_path, data, kind, words):
    assert_refused(read(tmp_path, data), kind, *words)


@pytest.mark.parametrize("data", [b"\x81\xa1a\xdb\xff\xff\xff\xff", b"\x81\xa1a\xc6\xff\xff\xff\xff"])
def test_huge_declared_strings(tmp_path, data):
    """A 4 GiB string or byte string that is not there: msgpack's C unpacker waits for its bytes (cut short),
    its pure-Python fallback checks the bound first; either way nothing is allocated."""
    info = read(tmp_path, data)
    words = "cut short" if info.kind == "truncated" else "over zoo's bound"
    assert_refused(info, info.kind if info.kind == "truncated" else "flax-msgpack", words)


def test_container_length_bound(tmp_path):
    at_bound = pack({str(i): i for i in range(MAX_CONTAINER_LEN)})
    assert read(tmp_path, at_bound).decoded
    assert_refused(
        read(tmp_path, pack({str(i): i for i in range(MAX_CONTAINER_LEN + 1)})),
        "flax-msgpack",
        f"map of {MAX_CONTAINER_LEN + 1} entries",
    )


def test_entry_count_bound(tmp_path):
    """Many small containers, each within bounds, are counted as msgpack builds them."""
    inner = b"\xdd" + struct.pack(">I", MAX_CONTAINER_LEN) + b"\xc0" * MAX_CONTAINER_LEN
    count = flaxfile.MAX_ENTRIES // MAX_CONTAINER_LEN + 1
    data = b"\x81\xa1a\xdc" + struct.pack(">H", count) + inner * count
    assert_refused(read(tmp_path, data), "flax-msgpack", f"more than {flaxfile.MAX_ENTRIES} msgpack entries")


def test_file_size_bound(tmp_path):
    path = tmp_path / "huge.cleanrl_model"
    with path.open("wb") as fh:
        fh.write(params_bytes())
        fh.truncate(MAX_FLAX_BYTES + 1)  # sparse: nothing is written, nothing is read
    info = holding_little(lambda: read_flax_file(path), bound_mib=16)  # refused unread, by its size
    assert info.size == MAX_FLAX_BYTES + 1
    assert_refused(info, "flax-msgpack", "over zoo's 2 GiB bound for a flax file")


def test_reading_imports_neither_jax_nor_flax(tmp_path):
    path = tmp_path / "m.cleanrl_model"
    path.write_bytes(
        pack({"params": {"w": ext_raw([2], "bfloat16", b"\x80?\x00@"), "b": ext_array(np.ones(2))}})
    )
    code = (
        "import sys\n"
        "from zoo.artifacts.flaxfile import read_flax_file, tensor_shapes\n"
        f"info = read_flax_file({str(path)!r})\n"
        "assert info.decoded, info.problem\n"
        "assert tensor_shapes(info.content) == {'params.w': (2,), 'params.b': (2,)}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'jaxlib', 'flax')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
