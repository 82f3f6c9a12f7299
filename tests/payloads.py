"""Hostile pickles, built opcode by opcode: every one must be refused, and none may ever run.

A malicious payload's side effect creates ``canary_dir/<name>``: a test (or the fuzz soak) that finds
the file knows a payload ran. ``expected`` is what the real pickle machine imports, read off the
opcodes below; the scanner must report exactly that (or, for a stream it cannot follow, fail closed).
These are byte sequences by nature, so they are written here, not produced by a library; the benign
files they sit next to in the fuzz suite all come from the real libraries.
"""

from __future__ import annotations

import copyreg
import pickle
import struct
from dataclasses import dataclass
from pathlib import Path

PROTO = lambda n: b"\x80" + bytes([n])  # noqa: E731
STOP, POP, DUP, MARK, POP_MARK = b".", b"0", b"2", b"(", b"1"
TUPLE, TUPLE1, TUPLE2, TUPLE3, EMPTY_TUPLE = b"t", b"\x85", b"\x86", b"\x87", b")"
REDUCE, OBJ, NEWOBJ, NEWOBJ_EX, STACK_GLOBAL, MEMOIZE = b"R", b"o", b"\x81", b"\x92", b"\x93", b"\x94"
EMPTY_DICT, EMPTY_LIST, APPEND, SETITEM, NONE, NEWTRUE = b"}", b"]", b"a", b"s", b"N", b"\x88"


def su(s: str) -> bytes:
    """SHORT_BINUNICODE"""
    raw = s.encode()
    return b"\x8c" + bytes([len(raw)]) + raw


def sbytes(raw: bytes) -> bytes:
    """SHORT_BINBYTES / BINBYTES"""
    return b"C" + bytes([len(raw)]) + raw if len(raw) < 256 else b"B" + struct.pack("<I", len(raw)) + raw


def text(s: str) -> bytes:
    """protocol 0 STRING"""
    return b"S" + repr(s).encode() + b"\n"


def glob(module: str, name: str, op: bytes = b"c") -> bytes:
    return op + module.encode() + b"\n" + name.encode() + b"\n"


def sg(module: str, name: str) -> bytes:
    return su(module) + su(name) + STACK_GLOBAL


BINPUT, BINGET = (lambda i: b"q" + bytes([i])), (lambda i: b"h" + bytes([i]))  # noqa: E731
PUT, GET = (lambda i: b"p%d\n" % i), (lambda i: b"g%d\n" % i)  # noqa: E731
FRAME = lambda n: b"\x95" + struct.pack("<Q", n)  # noqa: E731
OS = ("posix", "system")


@dataclass(frozen=True)
class Payload:
    name: str
    data: bytes
    expected: tuple[tuple[str, str], ...]  # globals the real machine imports (empty: none)
    malicious: bool = True


class _Reducer:
    def __init__(self, command: str):
        self.command = command

    def __reduce__(self):
        import os

        return (os.system, (self.command,))


def payloads(canary_dir: Path) -> list[Payload]:
    """Every payload kind, each touching ``canary_dir/<name>`` if it ever runs."""

    def touch(name: str) -> str:
        return f"touch {canary_dir / name}"

    def call(name: str, *head: bytes) -> bytes:
        return b"".join(head) + su(touch(name)) + TUPLE1 + REDUCE + STOP

    found: list[Payload] = []

    def add(name: str, data: bytes, *expected: tuple[str, str], malicious: bool = True) -> None:
        found.append(Payload(name, data, tuple(expected), malicious))

    # the evasion and its relatives: decoys that a "recent strings" guess would take
    add(
        "stack_global_pop",
        call(
            "stack_global_pop",
            PROTO(4),
            su("posix"),
            su("system"),
            su("collections"),
            POP,
            su("OrderedDict"),
            POP,
            STACK_GLOBAL,
        ),
        OS,
    )
    add(
        "stack_global_pop_mark",
        call(
            "stack_global_pop_mark",
            PROTO(4),
            su("posix"),
            su("system"),
            MARK,
            su("collections"),
            su("OrderedDict"),
            POP_MARK,
            STACK_GLOBAL,
        ),
        OS,
    )
    add(
        "stack_global_dup",
        call(
            "stack_global_dup",
            PROTO(4),
            su("posix"),
            su("system"),
            EMPTY_LIST,
            DUP,
            su("collections"),
            APPEND,
            su("OrderedDict"),
            APPEND,
            POP,
            POP,
            STACK_GLOBAL,
        ),
        OS,
    )
    add(
        "memo_after_pop",
        call(
            "memo_after_pop",
            PROTO(4),
            su("posix"),
            su("collections"),
            POP,
            BINPUT(0),
            POP,
            su("system"),
            BINPUT(1),
            POP,
            su("OrderedDict"),
            POP,
            BINGET(0),
            BINGET(1),
            STACK_GLOBAL,
        ),
        OS,
    )
    add(
        "memoize_after_pop",
        call(
            "memoize_after_pop",
            PROTO(4),
            su("posix"),
            su("collections"),
            POP,
            MEMOIZE,
            su("system"),
            su("OrderedDict"),
            POP,
            MEMOIZE,
            POP,
            POP,
            BINGET(0),
            BINGET(1),
            STACK_GLOBAL,
        ),
        OS,
    )
    add(
        "text_put_get",
        call(
            "text_put_get",
            PROTO(4),
            su("posix"),
            su("collections"),
            POP,
            PUT(7),
            POP,
            su("system"),
            PUT(8),
            POP,
            GET(7),
            GET(8),
            STACK_GLOBAL,
        ),
        OS,
    )
    # classic forms, every protocol
    add("p0_inst", MARK + text(touch("p0_inst")) + glob(*OS, op=b"i") + STOP, OS)
    add("p1_obj", MARK + glob(*OS) + su(touch("p1_obj")) + OBJ + STOP, OS)
    add(
        "p4_newobj_ex",
        PROTO(4)
        + sg("subprocess", "Popen")
        + EMPTY_TUPLE
        + EMPTY_DICT
        + su("args")
        + EMPTY_LIST
        + su("touch")
        + APPEND
        + SETITEM
        + NEWOBJ_EX
        + STOP,
        ("subprocess", "Popen"),
    )
    for protocol in range(6):
        name = f"reduce_p{protocol}"
        add(name, pickle.dumps(_Reducer(touch(name)), protocol=protocol), OS)
    # nested pickles and code runners that are not os.system
    inner = pickle.dumps(_Reducer(touch("nested_inner")), protocol=2)
    add(
        "nested_pickle_loads",
        PROTO(2) + glob("pickle", "loads") + sbytes(inner) + TUPLE1 + REDUCE + STOP,
        ("pickle", "loads"),
    )
    add(
        "nested_numpy_load",
        PROTO(2)
        + glob("numpy", "load")
        + glob("_io", "BytesIO")
        + sbytes(inner)
        + TUPLE1
        + REDUCE
        + NONE
        + NEWTRUE
        + TUPLE3
        + REDUCE
        + STOP,
        ("numpy", "load"),
        ("_io", "BytesIO"),
    )
    add(
        "nested_torch_load",
        PROTO(2)
        + glob("torch", "load")
        + glob("_io", "BytesIO")
        + sbytes(inner)
        + TUPLE1
        + REDUCE
        + TUPLE1
        + REDUCE
        + STOP,
        ("torch", "load"),
        ("_io", "BytesIO"),
    )
    add(
        "timeit",
        PROTO(4)
        + sg("timeit", "timeit")
        + su("pass")
        + su(f"__import__('os').system({touch('timeit')!r})")
        + TUPLE2
        + REDUCE
        + STOP,
        ("timeit", "timeit"),
    )
    add(
        "getattr_import",
        call(
            "getattr_import",
            PROTO(4),
            sg("builtins", "getattr"),
            sg("builtins", "__import__"),
            su("os"),
            TUPLE1,
            REDUCE,
            su("system"),
            TUPLE2,
            REDUCE,
        ),
        ("builtins", "getattr"),
        ("builtins", "__import__"),
    )
    add(
        "builtins_exec_p0",
        glob("__builtin__", "exec")
        + MARK
        + text(f"open({str(canary_dir / 'exec')!r}, 'w')")
        + TUPLE
        + REDUCE
        + STOP,
        ("__builtin__", "exec"),
    )
    add(
        "functools_partial",
        PROTO(4)
        + sg("functools", "partial")
        + sg(*OS)
        + su(touch("functools_partial"))
        + TUPLE2
        + REDUCE
        + EMPTY_TUPLE
        + REDUCE
        + STOP,
        ("functools", "partial"),
        OS,
    )
    add("dotted_name", call("dotted_name", PROTO(4), sg("torch", "os.system")), ("torch", "os.system"))
    add(
        "py2_cpickle",
        PROTO(2) + glob("cPickle", "loads") + sbytes(inner) + TUPLE1 + REDUCE + STOP,
        ("cPickle", "loads"),
    )
    add(
        "two_pickles",
        pickle.dumps(0x1950A86A20F9469CFC6C, protocol=2)
        + pickle.dumps(_Reducer(touch("two_pickles")), protocol=2),
        OS,
    )
    # streams a guessing scanner reads differently from the real machine
    add("hex_int", call("hex_int", PROTO(2), b"I0x10\n", POP, glob(*OS)), OS)
    add(
        "legacy_magic_then_hex",
        pickle.dumps(0x1950A86A20F9469CFC6C, protocol=2)
        + call("legacy_magic_then_hex", PROTO(2), b"I0x3e9\n", POP, glob(*OS)),
        OS,
    )
    hidden = (sg(*OS) + su(touch("frame_desync")) + TUPLE1 + REDUCE + STOP).ljust(125, b"\x00")
    add("frame_desync", PROTO(4) + FRAME(3) + b"\x8c\x08A" + b"xxxxxxxC" + b"}" + hidden + STOP, OS)
    add("truncated_after_call", PROTO(4) + sg(*OS) + su(touch("truncated_after_call")) + TUPLE1 + REDUCE, OS)
    # extension codes: registered only while this pickle is written, as an attacker's process would
    copyreg.add_extension(*OS, 0xE1)
    try:
        add("ext1", pickle.dumps(_Reducer(touch("ext1")), protocol=2))
    finally:
        copyreg.remove_extension(*OS, 0xE1)
    # bombs for the pickle machine itself (nothing to run; they must end quickly with little memory)
    add("memo_index_2p31", PROTO(4) + NONE + b"r" + struct.pack("<I", 2**31 - 1) + STOP, malicious=False)
    add("bytearray8_huge", PROTO(5) + b"\x96" + struct.pack("<Q", 2**40) + b"abc" + STOP, malicious=False)
    laughs = PROTO(4) + EMPTY_LIST + su("lol") + APPEND + MEMOIZE
    for i in range(30):
        laughs += EMPTY_LIST + MARK + BINGET(i) * 10 + b"e" + MEMOIZE
    add("memo_laughs", laughs + STOP, malicious=False)
    add("deep_nesting", PROTO(4) + EMPTY_LIST * 100_000 + APPEND * 99_999 + STOP, malicious=False)
    return found
