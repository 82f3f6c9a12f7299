"""``zoo hub serve`` under attack: thousands of hostile requests, and what the server answered.

The harness is the test suite's (``tests/hub_fuzzing.py``): ``zoo hub serve`` in a process of its own
(127.0.0.1, a fresh root, a token file), seeded with repos through its own API, then sent one seeded
hostile request after another over raw sockets, every route of the server with hostile ids, paths,
revisions, query strings, headers and bodies (case N is always the same request). Then the attacks the
issue reproduced, each once: an LFS batch of 200 bytes declaring a petabyte, a NUL in a path, a forged
``lfsFile`` line naming another user's private object.

Printed in one run: requests tried, answers by status, server errors (5xx but the 501 of a Hub call left
out), dropped connections (no HTTP answer), timeouts, and the server's resident memory before and at its
peak (the kernel's high-water mark, ``VmHWM``); then the failing cases, if any, one line each. Exit 1 on
any server error, dropped connection or timeout, or a peak more than ``--max-growth-mib`` above the start.

    python benchmarks/hub_attack.py [--cases 20000] [--first 0] [--max-growth-mib 256]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=20_000, help="hostile requests to send")
    parser.add_argument("--first", type=int, default=0, help="number of the first case (to resume a soak)")
    parser.add_argument(
        "--max-growth-mib", type=float, default=256, help="the peak RSS allowed above the start"
    )
    parser.add_argument("--failures", type=int, default=20, help="failing cases to print in full")
    args = parser.parse_args()
    from hub_fuzzing import ALICE, BOB, Case, answer, attack, describe, memory, seed_world, send, zoo_serve

    work = Path(tempfile.mkdtemp(prefix="zoo-hub-attack-"))
    (work / "tokens.txt").write_text(f"{ALICE} alice lab\n{BOB} bob\n")
    start = time.perf_counter()
    with zoo_serve(work / "root", "--token-file", str(work / "tokens.txt")) as server:
        world = seed_world(server.url)
        print(
            f"zoo hub serve on {server.url}, seeded with 3 repos in {time.perf_counter() - start:.1f} s",
            flush=True,
        )
        done = {"n": 0}

        def progress(case: Case, outcome: int | str) -> None:
            done["n"] += 1
            if done["n"] % 5000 == 0:
                print(
                    f"  {done['n']} requests, {time.perf_counter() - start:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )

        report = attack(server, world, range(args.first, args.first + args.cases), on_case=progress)
        alice = (("Authorization", f"Bearer {ALICE}"),)
        reproduced = {  # the attacks, each once, by hand
            "1 PiB LFS batch": Case(
                -1,
                "batch",
                "POST",
                "/alice/open.git/info/lfs/objects/batch",
                alice,
                json.dumps({"operation": "upload", "objects": [{"oid": "a" * 64, "size": 1 << 50}]}).encode(),
            ),
            "NUL in a path": Case(-2, "resolve", "GET", "/alice/open/resolve/main/%00", (), b""),
            "forged lfsFile": Case(
                -3,
                "commit",
                "POST",
                "/api/models/bob/mine/commit/main",
                (("Authorization", f"Bearer {BOB}"),),
                b"".join(
                    json.dumps(line).encode() + b"\n"
                    for line in (
                        {"key": "header", "value": {"summary": "x"}},
                        {
                            "key": "lfsFile",
                            "value": {
                                "path": "w.bin",
                                "algo": "sha256",
                                "oid": world.secret_oid,
                                "size": world.secret_size,
                            },
                        },
                    )
                ),
            ),
        }
        outcomes = {name: send(server.url, case) for name, case in reproduced.items()}
        assert answer(server.url) == 401  # still answering (a token file: whoami needs a token)
        report.rss_peak = memory(server.proc.pid)[1]
        errors = sum(" ERROR error " in line for line in server.log.read_text().splitlines())
    shutil.rmtree(work, ignore_errors=True)
    growth = (report.rss_peak - report.rss_before) / 2**20
    print(report.table())
    print(f"server bugs logged   {errors} (zoo.hub.error)")
    print("the issue's attacks  " + ", ".join(f"{name}: {outcome}" for name, outcome in outcomes.items()))
    for case, outcome in report.failures[: args.failures]:
        print(describe(case, outcome))
    expected = {"1 PiB LFS batch": 200, "NUL in a path": 404, "forged lfsFile": 400}  # 200: its object a 422
    ok = not report.failures and not errors and growth <= args.max_growth_mib and outcomes == expected
    print(
        f"{'ok' if ok else 'FAILED'}: peak {growth:.1f} MiB above the start (bound {args.max_growth_mib:g} MiB)"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
