"""PNG figures of runs: learning curves with a 95% band over seeds, eval-return strips, a run's histogram.

matplotlib is imported inside the functions (``zoo --help`` must not pay for it), and every figure is drawn
on a bare :class:`matplotlib.figure.Figure` with the Agg canvas under matplotlib's default style: no pyplot
state, no user matplotlibrc, no display. The same data give the same bytes (the strip's jitter comes from a
fixed seed). Each PNG is written atomically (a temp file beside it, then a rename).

Learning curves: each seed's ``(step, return)`` points are interpolated linearly (``numpy.interp``) on a
common grid of :data:`GRID_POINTS` steps spanning the range every seed covers (the latest first step to the
earliest last step), so that a seed never stands in for steps it did not reach. The line is the mean over
seeds at each grid step and the band its 95% Student-t interval (``scipy.stats.t.interval`` with
``scipy.stats.sem``), which, unlike a bootstrap, stays meaningful at the 2 to 5 seeds a run has. An
experiment with one seed is drawn as that seed's own curve, without a band.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

#: Steps of the common grid seeds are interpolated onto.
GRID_POINTS = 200
CONFIDENCE = 0.95
JITTER_SEED = 0
_SIZE = (7.0, 4.0)
_DPI = 100

Series = Sequence[tuple[int, float]]


def _figure():
    from matplotlib.figure import Figure

    return Figure(figsize=_SIZE, dpi=_DPI, layout="constrained")


def _save(fig, path: Path) -> Path:
    """Render with Agg and write the PNG atomically (no timestamp in its metadata: same figure, same bytes)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from zoo.atomic import write_bytes_atomic

    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    return write_bytes_atomic(Path(path), buffer.getvalue())


def _style():
    import matplotlib.style

    return matplotlib.style.context("default")


def curve_band(
    seeds: Sequence[Series],
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """``(grid, mean, low, high)`` of several seeds' curves on a common step grid; ``low``/``high`` are None
    for a single seed (whose own points are then returned as grid and mean)."""
    curves = [np.asarray(s, dtype=np.float64).reshape(-1, 2) for s in seeds if len(s)]
    if not curves:
        raise ValueError("no points")
    if len(curves) == 1:
        return curves[0][:, 0], curves[0][:, 1], None, None
    start = max(c[0, 0] for c in curves)
    stop = min(c[-1, 0] for c in curves)
    if stop <= start:  # the seeds share no steps: the union of their ranges, each held at its ends
        start, stop = min(c[0, 0] for c in curves), max(c[-1, 0] for c in curves)
    grid = np.linspace(start, stop, GRID_POINTS)
    values = np.stack([np.interp(grid, c[:, 0], c[:, 1]) for c in curves])
    from scipy import stats

    mean = values.mean(axis=0)
    sem = stats.sem(values, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        low, high = stats.t.interval(CONFIDENCE, df=len(curves) - 1, loc=mean, scale=sem)
    flat = ~np.isfinite(low) | (sem == 0)  # every seed equal: a zero-width band
    return grid, mean, np.where(flat, mean, low), np.where(flat, mean, high)


def learning_curves(
    experiments: Mapping[str, Sequence[Series]],
    path: Path,
    *,
    title: str = "",
    ylabel: str = "episodic return",
) -> Path:
    """One axes, a line per experiment (``name -> [seed series, ...]``): the mean over its seeds with the 95%
    band, or the seed's own curve when it has one. Experiments without a point are left out (an empty
    figure says "no training returns logged")."""
    with _style():
        fig = _figure()
        ax = fig.add_subplot()
        drawn = 0
        for i, (name, seeds) in enumerate(sorted(experiments.items())):
            seeds = [s for s in seeds if len(s)]
            if not seeds:
                continue
            color = f"C{i % 10}"
            grid, mean, low, high = curve_band(seeds)
            n = len(seeds)
            label = f"{name} ({n} seed{'' if n == 1 else 's'}{', mean, 95% CI' if n > 1 else ''})"
            ax.plot(grid, mean, color=color, linewidth=1.5, label=label)
            if low is not None:
                ax.fill_between(grid, low, high, color=color, alpha=0.25, linewidth=0)
            drawn += 1
        if drawn:
            ax.legend(loc="best", fontsize="small")
        else:
            ax.text(0.5, 0.5, "no training returns logged", ha="center", va="center", transform=ax.transAxes)
        ax.set_xlabel("step")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        return _save(fig, path)


def eval_strip(
    experiments: Mapping[str, Sequence[tuple[str, Sequence[float]]]], path: Path, *, title: str = ""
) -> Path:
    """Per experiment (``name -> [(seed label, episode returns), ...]``) one column: a dot per episode,
    jittered sideways (fixed seed), colored by seed, with each seed's mean marked by a black bar."""
    rng = np.random.default_rng(JITTER_SEED)
    with _style():
        fig = _figure()
        ax = fig.add_subplot()
        names = sorted(experiments)
        for x, name in enumerate(names):
            seeds = list(experiments[name])
            for j, (_label, returns) in enumerate(seeds):
                values = np.asarray(returns, dtype=np.float64)
                if values.size == 0:
                    continue
                offset = (j - (len(seeds) - 1) / 2) * (0.6 / max(len(seeds), 1))
                jitter = rng.uniform(-0.06, 0.06, values.size)
                ax.scatter(x + offset + jitter, values, s=14, alpha=0.6, color=f"C{j % 10}", linewidths=0)
                ax.hlines(values.mean(), x + offset - 0.12, x + offset + 0.12, colors="black", linewidth=2)
        ax.set_xticks(range(len(names)), names)
        ax.set_xlim(-0.6, max(len(names) - 1, 0) + 0.6)
        ax.set_ylabel("eval episode return")
        ax.set_title(title or "eval returns: a dot per episode, a bar per seed mean")
        ax.grid(True, axis="y", alpha=0.3)
        return _save(fig, path)


def return_histogram(returns: Sequence[float], path: Path, *, title: str = "") -> Path:
    """One run's eval returns as a histogram, with their mean as a dashed line."""
    values = np.asarray(returns, dtype=np.float64)
    with _style():
        fig = _figure()
        ax = fig.add_subplot()
        if values.size:
            span = float(values.max() - values.min())
            bins = min(30, max(1, int(np.ceil(np.sqrt(values.size))))) if span > 0 else 1
            edges = bins if span > 0 else [values[0] - 0.5, values[0] + 0.5]
            ax.hist(values, bins=edges, color="C0", edgecolor="white")
            mean = float(values.mean())
            ax.axvline(mean, color="black", linestyle="--", linewidth=1.5, label=f"mean {mean:.2f}")
            ax.legend(loc="best", fontsize="small")
        ax.set_xlabel("eval episode return")
        ax.set_ylabel("episodes")
        ax.set_title(title or f"eval returns ({values.size} episodes)")
        ax.grid(True, axis="y", alpha=0.3)
        return _save(fig, path)
