"""Soak zoo's verification with thousands of mutants of real artifacts and every hostile pickle kind.

The harness is the test suite's (``tests/fuzzing.py``): seeds written by the real libraries, seeded
mutations (case N of a format is always the same mutant), ``zoo check`` as the verdict and the real
loaders (``zipfile.testzip``, ``torch.load(weights_only=True)``, zoo's own loader plus one action) as
the oracle for every "ok". It prints one row per format: cases, verdicts, runs lost to a damaged model
file, wrong ok verdicts, internal errors, cases that printed anything but JSON and a one-line error
(a traceback, a warning), hangs (a case over 60 s), the slowest case, and the canaries that payloads
left (none, or zoo ran one). Exit 1 on any of these.

    python benchmarks/fuzz.py [--mutants 2000] [--formats cleanrl,sb3] [--seed-dir DIR] [--failures N]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mutants", type=int, default=2000, help="cases per format")
    parser.add_argument("--formats", default=None, help="comma-separated subset of the formats")
    parser.add_argument(
        "--seed-dir", type=Path, default=None, help="build the seed artifacts here and keep them"
    )
    parser.add_argument("--failures", type=int, default=20, help="failing cases to print in full")
    args = parser.parse_args()
    work = args.seed_dir or Path(tempfile.mkdtemp(prefix="zoo-fuzz-"))
    os.environ.setdefault("ZOO_CACHE_DIR", str(work / "cache"))
    warnings.simplefilter("ignore")
    from fuzzing import FORMATS, build_seeds, describe, fuzz

    formats = args.formats.split(",") if args.formats else list(FORMATS)
    start = time.perf_counter()
    seeds = build_seeds(work / "seeds")
    print(
        f"seeds: {', '.join(formats)} written by their libraries in {time.perf_counter() - start:.1f}s",
        flush=True,
    )
    done = {"n": 0}

    def progress(outcome) -> None:
        done["n"] += 1
        if done["n"] % 500 == 0:
            print(f"  {done['n']} cases, {time.perf_counter() - start:.0f}s", file=sys.stderr, flush=True)

    summary = fuzz(seeds, args.mutants, work / "canary", formats=formats, on_case=progress)
    print(f"{len(summary.outcomes)} cases in {time.perf_counter() - start:.0f}s\n")
    print(summary.table())
    for outcome in summary.failures[: args.failures]:
        print(f"\n{outcome.format} case {outcome.case} ({outcome.mutation}): {describe(outcome)}")
    return 1 if summary.failures or summary.canaries else 0


if __name__ == "__main__":
    sys.exit(main())
