"""Every command of README.md and docs/ runs as written from the repo root, and prints what its page shows.

How a page is read and run is tests/docs_transcripts.py's docstring: transcripts (```console), ```bash and
```python blocks; each page in order, in one bash session, in a scratch copy of the repo's ``COPIED`` paths (the repo
itself is never written to). Every command must exit with the status its page shows, and every line its page shows
must be printed, in order (durations masked, spaces collapsed, ``…`` any text). A page that uses the network (``--allow-download``,
``push --yes``, ``HF_ENDPOINT``) gets ``HF_ENDPOINT`` pointed at a local ``zoo hub serve`` that already holds the
bundled dqn run as ``cleanrl/CartPole-v1-dqn-seed1`` (``HUB_SEED``: pushed once per session with ``zoo push --yes``,
then each page gets a copy of that store).

A page is run only once it is converted (listed in ``PAGES``); the others are listed in ``NOT_CONVERTED`` until they
are, so that no page is forgotten. What a converted page shows but does not run is listed in ``NOT_RUN``, and its
line in the page says why (``# not run here: REASON``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from docs_transcripts import REPO, PageError, PageRun, base_env, describe, parse, seed_hub

#: The pages whose commands run, with their marks (``trains``: a shown command trains with a real library, seconds;
#: ``slow``: minutes; ``genesis``: it builds Genesis scenes). ``dev.py test --fast`` leaves the marked ones out.
PAGES: dict[str, tuple] = {
    "README.md": (),
    "docs/adding-a-framework.md": (),
    "docs/examples.md": (),
    "docs/export.md": (pytest.mark.trains,),  # an rsl_rl LSTM run, 4 iterations
    "docs/frameworks/cleanrl.md": (),
    "docs/frameworks/custom.md": (),
    "docs/frameworks/genesis.md": (pytest.mark.trains, pytest.mark.slow, pytest.mark.genesis),
    "docs/frameworks/myosuite.md": (),
    "docs/leaderboard.md": (),
    "docs/python-api.md": (),
    "docs/registry.md": (),
    "docs/report.md": (),
    "docs/scale-out.md": (pytest.mark.slow,),  # starts a local Ray
    "docs/tensor-envs.md": (pytest.mark.trains,),  # an rsl_rl MLP run, 4 iterations
}

#: Pages not converted yet: their commands still name folders a reader does not have. Not run.
NOT_CONVERTED = {
    "docs/check.md", "docs/eval.md", "docs/enjoy.md", "docs/watch.md", "docs/push.md", "docs/doctor.md",
    "docs/hub-serve.md", "docs/benchmarks.md", "docs/frameworks/sb3.md", "docs/frameworks/skrl.md",
    "docs/frameworks/rsl_rl.md",
}  # fmt: skip

#: What converted pages show but do not run (each line says why in its page: ``# not run here: REASON``).
NOT_RUN: dict[str, set[str]] = {
    "README.md": {"python3 dev.py demo", "python3 dev.py test", "pip install torch==2.13.0 -e ."},
    "docs/adding-a-framework.md": {"# fragment: zoo/frameworks/mylib/__init__.py, the methods' bodies are yours"},
    "docs/examples.md": {"python examples/train_examples.py", "python examples/train_examples.py --only dqn,c51 --out /tmp/runs"},
    "docs/frameworks/genesis.md": {"pip install 'rl-zoo-hub[genesis,rsl]'"},
    "docs/frameworks/myosuite.md": {
        "pip install torch==2.13.0 && pip install 'rl-zoo-hub[sb3,myosuite]'", "zoo check logs",
        "zoo eval logs/ppo/myoElbowPose1D6MRandom-v0_1 --episodes 10 --deterministic",
        "zoo doctor --framework sb3 --policy logs/ppo/myoElbowPose1D6MRandom-v0_1 --probe-env",
    },
    "docs/scale-out.md": {
        "pip install 'rl-zoo-hub[ray]'", "ray start --head --port 6379 --num-cpus 0",
        "ray start --address HEAD:6379 --num-cpus 32",
        "zoo eval /shared/runs --all --executor ray --address HEAD:6379 --num-cpus 64",
    },
    "docs/tensor-envs.md": {
        "zoo eval logs/rsl_rl/anymal/2026-11-30_10-00-00 --env-id Isaac-Velocity-Flat-Anymal-C-v0",
    },
}  # fmt: skip


def _pages() -> set[str]:
    return {"README.md"} | {p.relative_to(REPO).as_posix() for p in (REPO / "docs").rglob("*.md")}


def _command(text: str) -> str:
    """A command as NOT_RUN lists it: its first line, its comment and a continuing backslash dropped."""
    return re.sub(r"\s+#.*$|\s*\\$", "", text.strip().splitlines()[0]).strip()


@pytest.fixture(scope="session")
def hub_store(tmp_path_factory):
    """A hub store holding ``HUB_SEED``, made on first use (the pages that use the network) and copied per page."""
    store = tmp_path_factory.mktemp("docs-hub") / "store"

    def seeded() -> Path:
        if not store.exists():
            seed_hub(store, base_env(store.parent))
        return store

    return seeded


def test_every_page_is_run_or_listed():
    assert _pages() == set(PAGES) | NOT_CONVERTED, "a page is neither run (PAGES) nor listed (NOT_CONVERTED)"
    assert not set(PAGES) & NOT_CONVERTED


@pytest.mark.parametrize("page", sorted(PAGES))
def test_page_reads_unambiguously(page):
    """Every block says what it is; the commands shown but not run are exactly NOT_RUN's, each with its reason."""
    try:
        steps = parse(REPO / page)
    except PageError as exc:
        pytest.fail(str(exc))
    not_run = {_command(s.text) for s in steps if s.not_run is not None}
    assert not_run == NOT_RUN.get(page, set()), (
        f"{page}: the commands it does not run are not the listed ones"
    )
    assert all(s.not_run.strip() for s in steps if s.not_run is not None)


@pytest.mark.parametrize("page", [pytest.param(p, marks=m) for p, m in sorted(PAGES.items())])
def test_page_runs_as_shown(page, tmp_path, hub_store):
    outcomes = PageRun(REPO / page, tmp_path, hub_store).run()
    not_run = [o.step for o in outcomes if o.step.not_run is not None]
    for step in not_run:  # listed in the test's output (-rP), as NOT_RUN lists them in its source
        print(f"not run: {step.where}: {_command(step.text)} ({step.not_run})")
    failures = [describe(o) for o in outcomes if o.problem]
    assert not failures, f"{page}: {len(failures)} command(s) not as shown\n\n" + "\n\n".join(failures)
    assert len(outcomes) == len(parse(REPO / page)), "the page stopped early"


def test_python_api_page_covers_every_function():
    code = "".join(s.text for s in parse(REPO / "docs" / "python-api.md") if s.kind == "python")
    for name in ("check", "evaluate", "evaluate_all", "plan", "load_policy", "export", "push", "enjoy", "watch",
                 "diagnose"):  # fmt: skip
        assert f"zoo.{name}(" in code, name
