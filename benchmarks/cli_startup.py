"""How fast ``zoo --help`` and ``zoo --version`` start, against ``python -c "import click, rich"``.

The target: ``zoo --help`` within 1.5x of the bare import of the two libraries a CLI like it needs.
Each command runs ``--rounds`` times, interleaved (so that a busy moment hits all of them alike), and
the median wall time of each is compared::

    .venv/bin/python benchmarks/cli_startup.py [--rounds 30]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

BIN = Path(sys.executable).parent
COMMANDS = {
    'python -c "import click, rich"': [sys.executable, "-c", "import click, rich"],
    "zoo --help": [str(BIN / "zoo"), "--help"],
    "zoo --version": [str(BIN / "zoo"), "--version"],
    "zoo eval --help": [str(BIN / "zoo"), "eval", "--help"],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    rounds = parser.parse_args().rounds
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(rounds):
        for name, cmd in COMMANDS.items():
            start = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            times[name].append(time.perf_counter() - start)
    base = statistics.median(times['python -c "import click, rich"'])
    print(f"{'command':34} {'median ms':>10} {'ratio':>7}   ({rounds} rounds, interleaved)")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:34} {median * 1000:10.1f} {median / base:6.2f}x")


if __name__ == "__main__":
    main()
