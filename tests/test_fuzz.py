"""Hostile input: mutants of real artifacts and hostile pickles get a true verdict, in one line, as JSON.

Each format's seed is written by its real library (:func:`fuzzing.build_seeds`); each case mutates it
deterministically (the case number is the seed of its RNG), so a failure names a case that reproduces.
The same harness soaks thousands of cases in ``benchmarks/fuzz.py``. Asserted here, per format:

- no wrong ``ok``: whenever ``zoo check`` says ok, ``zipfile.testzip()``, ``torch.load(weights_only=True)``
  and zoo's own loader (plus one action) all succeed;
- no internal error: every refusal is one line with a fix, from check and from the loader alike;
- ``zoo check --json`` always prints JSON, and nothing else reaches the terminal (no traceback, no warning,
  nothing numpy could only print); a damaged model file is its run's error row, never a lost run;
- no payload ever runs (its canary file never appears), and no case hangs (a generous guard, not a speed
  target: speed is ``benchmarks/fuzz.py``'s business).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fuzzing import FORMATS, build_seeds, describe, fuzz
from payloads import payloads

from zoo.artifacts.pickles import classify, scan_pickles
from zoo.artifacts.torchfile import ALLOWED

CASES = 50  # per format: every mutator and payload kind once (45 at most), then seeded picks; benchmarks/fuzz.py soaks more


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    return build_seeds(tmp_path_factory.mktemp("fuzz-seeds"))


@pytest.mark.slow
@pytest.mark.parametrize("fmt", FORMATS)
def test_mutants_of_real_artifacts_get_a_true_verdict_in_one_line(seeds, fmt, tmp_path):
    canaries = tmp_path / "canary"
    summary = fuzz(seeds, CASES, canaries, formats=[fmt])
    (row,) = summary.rows()
    described = [f"case {o.case} ({o.mutation}): {describe(o)}" for o in summary.failures]
    assert not described, "\n".join(described[:10])
    assert summary.canaries == [] and not any(canaries.iterdir())
    assert row["ok"] > 0 and row["clean errors"] > 0, row  # both sides of the oracle were exercised


@pytest.mark.parametrize("payload", payloads(Path("/nonexistent-canary")), ids=lambda p: p.name)
def test_the_scanner_reports_what_the_pickle_machine_imports(payload):
    """Ground truth read off the opcodes: the scan reports exactly it, or fails closed (never "clean")."""
    count = 5 if payload.name in ("two_pickles", "legacy_magic_then_hex") else 1
    scan = scan_pickles(payload.data, count)
    verdict = classify(scan.globals, ALLOWED)
    if scan.complete or scan.globals:
        assert list(dict.fromkeys(scan.globals)) == list(dict.fromkeys(payload.expected))
    if payload.malicious:
        assert verdict.dangerous or not scan.complete  # unsafe, or refused as a stream zoo cannot follow
