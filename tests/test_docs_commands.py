"""Every command of README.md and docs/ runs as written from the repo root, and prints what its page shows.

How a page is read and run is tests/docs_transcripts.py's docstring: transcripts (```console), ```bash and
```python blocks; each page in order, in one bash session, in a scratch copy of the repo's ``COPIED`` paths (the repo
itself is never written to). Every command must exit with the status its page shows, and every line its page shows
must be printed, in order (durations masked, spaces collapsed, ``…`` any text). A page that uses the network (``--allow-download``,
``push --yes``, ``HF_ENDPOINT``) gets ``HF_ENDPOINT`` pointed at a local ``zoo hub serve`` that already holds the
bundled dqn run as ``cleanrl/CartPole-v1-dqn-seed1`` (``HUB_SEED``: pushed once per session with ``zoo push --yes``,
then each page gets a copy of that store).

Every page is listed in ``PAGES``, so that no page is forgotten. What a page shows but does not run is listed in
``NOT_RUN``, and its line in the page says why (``# not run here: REASON``).
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
    "docs/benchmarks.md": (),  # measured figures, shown as text: nothing to run
    "docs/check.md": (pytest.mark.trains,),  # an rl_zoo3 PPO run, 256 steps
    "docs/doctor.md": (),
    "docs/enjoy.md": (),
    "docs/eval.md": (),
    "docs/examples.md": (),
    "docs/export.md": (pytest.mark.trains,),  # an rsl_rl LSTM run, 4 iterations
    "docs/frameworks/cleanrl.md": (),
    "docs/frameworks/custom.md": (),
    "docs/frameworks/deprl.md": (),  # reads deprl's committed run (it trains in its own venv)
    "docs/frameworks/genesis.md": (pytest.mark.trains, pytest.mark.slow, pytest.mark.genesis),
    "docs/frameworks/myosuite.md": (),
    "docs/frameworks/rl_games.md": (),  # reads the committed runs of tests/data/trainer_runs/rl_games
    "docs/frameworks/rsl_rl.md": (pytest.mark.trains,),  # 5 rsl_rl runs (MLP, LSTM, CNN, distillation), 4 its
    "docs/frameworks/sample_factory.md": (),  # reads the committed run in tests/data/trainer_runs
    "docs/frameworks/sb3.md": (
        pytest.mark.trains,
    ),  # 3 rl_zoo3 runs (Breakout 64 steps) and 10 SB3 zips, <= 800 steps
    "docs/frameworks/skrl.md": (pytest.mark.trains,),  # 7 skrl runs, 256 to 1,000 steps x 4 envs
    "docs/frameworks/torchrl.md": (),  # the committed TorchRL run
    "docs/frameworks/tianshou.md": (),  # the committed runs in tests/data/trainer_runs/tianshou
    "docs/hub-serve.md": (),
    "docs/leaderboard.md": (),
    "docs/push.md": (pytest.mark.trains,),  # an rl_zoo3 PPO run, 2,048 steps
    "docs/python-api.md": (),
    "docs/registry.md": (),
    "docs/release-format.md": (pytest.mark.trains,),  # an rsl_rl MLP run, 4 iterations, and its release forms
    "docs/report.md": (),
    "docs/scale-out.md": (pytest.mark.slow,),  # starts a local Ray
    "docs/tensor-envs.md": (pytest.mark.trains,),  # an rsl_rl MLP run, 4 iterations
    "docs/watch.md": (pytest.mark.trains,),  # an rl_zoo3 PPO run of 4,096 steps; SB3 PPO, 1,024 steps
}

#: What converted pages show but do not run (each line says why in its page: ``# not run here: REASON``).
NOT_RUN: dict[str, set[str]] = {
    "README.md": {"python3 dev.py demo", "python3 dev.py test", "pip install torch==2.13.0 -e '.[server]'"},
    "docs/adding-a-framework.md": {
        "# fragment: zoo/frameworks/mylib/__init__.py, the methods' bodies are yours"
    },
    "docs/enjoy.md": {"export HF_ENDPOINT=http://hub.internal:8000 HF_HUB_DISABLE_XET=1 HF_TOKEN=..."},
    "docs/examples.md": {
        "python examples/train_examples.py",
        "python examples/train_examples.py --only dqn,c51 --out /tmp/runs",
    },
    "docs/frameworks/genesis.md": {"pip install 'rl-zoo-hub[genesis,rsl]'"},
    "docs/hub-serve.md": {
        "# fragment: serve from Python with raised limits (it blocks until Ctrl-C, as zoo hub serve does)"
    },
    "docs/frameworks/myosuite.md": {
        "pip install torch==2.13.0 && pip install 'rl-zoo-hub[sb3,myosuite]'",
        "zoo check logs",
        "zoo eval logs/ppo/myoElbowPose1D6MRandom-v0_1 --episodes 10 --deterministic",
        "zoo doctor --framework sb3 --policy logs/ppo/myoElbowPose1D6MRandom-v0_1 --probe-env",
    },
    "docs/scale-out.md": {
        "pip install 'rl-zoo-hub[ray]'",
        "ray start --head --port 6379 --num-cpus 0",
        "ray start --address HEAD:6379 --num-cpus 32",
        "zoo eval /shared/runs --all --executor ray --address HEAD:6379 --num-cpus 64",
    },
    "docs/tensor-envs.md": {
        "zoo eval logs/rsl_rl/anymal/2026-11-30_10-00-00 --env-id Isaac-Velocity-Flat-Anymal-C-v0",
    },
}


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


def test_every_page_is_run():
    assert _pages() == set(PAGES), "a page that is not run: list it in PAGES"


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
    for name in (
        "check",
        "evaluate",
        "evaluate_all",
        "plan",
        "load_policy",
        "export",
        "push",
        "enjoy",
        "watch",
        "diagnose",
    ):
        assert f"zoo.{name}(" in code, name


def _page(tmp_path: Path, text: str) -> Path:
    page = tmp_path / "page.md"
    page.write_text(text)
    return page


def test_a_page_that_says_what_zoo_does_not_do_fails(tmp_path):
    """The test's own check: a wrong exit status stops the page with the line named, a line zoo does not print
    is one; a right one passes, ``…`` standing for any text."""
    page = _page(
        tmp_path,
        """
```console
$ zoo registry show dqnn
error: unknown experiment 'dqnn'
hint: did you mean …?
$ echo $?
1
$ zoo registry show dqnn
error: unknown experiment 'dqnn'
$ echo $?
2
```

```bash
zoo registry show c51
```

```console
$ zoo registry show c51
framework: sb3
```
""",
    )
    first, second = PageRun(page, tmp_path / "run", None).run()
    assert first.problem is None and first.exit == 1
    assert second.problem == "exit 1, the page says 2" and second.fatal  # the page stops there
    later = PageRun(page, tmp_path / "run-on", None).run(keep_going=True)
    assert [o.problem for o in later[2:]] == [None, "shown but not printed:\n    framework: sb3"]
    message = describe(second)
    assert "page.md:8: zoo registry show dqnn" in message and "| error: unknown experiment" in message


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("```\n$ zoo check runs/\n```\n", "a fenced block without a language"),
        ("```text\n$ zoo check runs/\n```\n", "`$ ` commands in a ```text block"),
        ("```console\nzoo check runs/\n```\n", "this one comes before any command"),
        ("```console\n$ echo $?\n1\n```\n", "`$ echo $?` must follow a command"),
        ("```python\n# zoo/nowhere.py\nx = 1\n```\n", "which is not in the repo"),
        ("```bash\nzoo check runs/\n", "never closed"),
    ],
)
def test_a_block_that_could_be_read_two_ways_is_refused(tmp_path, text, error):
    with pytest.raises(PageError, match=re.escape(error)):
        parse(_page(tmp_path, text))


def test_python_blocks_share_names_and_show_what_they_print(tmp_path):
    page = _page(tmp_path, "```python\nx = 6 * 7\n```\n\n```python\nprint(x)\n```\n\n```text\n42\n```\n")
    outcomes = PageRun(page, tmp_path / "run", None).run()
    assert [(o.exit, o.problem) for o in outcomes] == [(0, None), (0, None)]
    assert outcomes[1].output == "42\n"
