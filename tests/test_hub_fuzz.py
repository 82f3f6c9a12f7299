"""A fuzz pass over every route of a real ``zoo hub serve``: hostile requests get an HTTP answer.

The harness is ``tests/hub_fuzzing.py`` (``benchmarks/hub_attack.py`` soaks it with 20,000 cases): the
server in a subprocess with a token file, seeded with public and private repos through its own API, then
sent seeded hostile ids, paths, revisions, query strings, headers and bodies on every route. Asserted:

- every request gets an HTTP answer: no dropped connection, no timeout (a generous hang guard);
- no server error: no 5xx but the 501 that names a Hub call left out, and no traceback in the log;
- memory stays bounded: the server's peak resident set (its ``VmHWM``) grows less than 128 MiB over the
  whole pass (the largest body a case sends is a few MB; the limits allow far more per request);
- the pass reaches the handlers' depths, not only their refusals: successes, redirects and each kind of
  refusal are among the answers.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hub_fuzzing import ALICE, BOB, attack, describe, seed_world, zoo_serve

CASES = 1500
MAX_GROWTH = 128 << 20


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the server's memory from /proc")
def test_hostile_requests_on_every_route_get_an_answer_and_memory_stays_bounded(tmp_path):
    tokens = tmp_path / "tokens.txt"
    tokens.write_text(f"{ALICE} alice lab\n{BOB} bob\n")
    with zoo_serve(tmp_path / "root", "--token-file", str(tokens)) as server:
        world = seed_world(server.url)
        report = attack(server, world, range(CASES))
        log = server.log.read_text()
    assert not report.failures, "\n".join(describe(*failure) for failure in report.failures[:20])
    assert report.tried == CASES and report.dropped == 0
    assert " ERROR " not in log, [line for line in log.splitlines() if " ERROR " in line][:5]
    assert report.rss_peak - report.rss_before < MAX_GROWTH, report.table()
    assert {200, 303, 400, 401, 403, 404, 405, 413, 501} <= set(report.statuses), report.statuses
