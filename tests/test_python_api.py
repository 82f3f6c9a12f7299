"""docs/python-api.md is true: its examples run, in order, and print exactly the output it shows."""

from __future__ import annotations

import contextlib
import io
import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "python-api.md"


def _examples() -> list[tuple[str, str]]:
    """``(code, shown output)`` for each python block followed by a text block."""
    blocks = re.findall(r"```(python|text)\n(.*?)```", PAGE.read_text(), flags=re.DOTALL)
    pairs = []
    for (kind, code), (next_kind, shown) in zip(blocks, blocks[1:], strict=False):
        if kind == "python" and next_kind == "text":
            pairs.append((code, shown))
    return pairs


def test_the_page_has_examples_for_every_function():
    code = "".join(c for c, _ in _examples())
    for name in ("check", "evaluate", "evaluate_all", "plan", "load_policy", "export", "push", "enjoy", "watch", "diagnose"):
        assert f"zoo.{name}(" in code, name


def test_every_example_prints_what_the_page_shows(tmp_path, monkeypatch):
    shutil.copytree(ROOT / "examples" / "runs", tmp_path / "runs")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for code, shown in _examples():
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(code, str(PAGE), "exec"), namespace)  # noqa: S102 - the page's own examples
        assert printed.getvalue() == shown, code
