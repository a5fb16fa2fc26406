"""Learning-curve figures (matplotlib, drawn off-screen): the mean evaluation return across
seeds against env steps, with the spread across seeds (or a confidence band of the mean)
shaded, and each run's best and final evaluations marked."""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np

from jaxrl.io.metrics import read_csv
from jaxrl.io.run_dir import RunDir

Spread = Literal["std", "ci95", "minmax", "none"]


def learning_curve(evals_csv: str | Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(env_steps [P], returns [P, S], seeds [S])`` from an ``evals.csv`` (NaN where a seed
    has no evaluation at that step)."""
    table = read_csv(evals_csv)
    if not table or len(table["env_steps"]) == 0:
        return np.zeros(0), np.zeros((0, 0)), np.zeros(0)
    steps = np.unique(table["env_steps"])
    seeds = np.unique(table["seed"])
    returns = np.full((len(steps), len(seeds)), np.nan)
    rows = np.searchsorted(steps, table["env_steps"])
    cols = np.searchsorted(seeds, table["seed"])
    returns[rows, cols] = table["eval_return"]
    return steps, returns, seeds


def band(returns: np.ndarray, spread: Spread) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(mean, low, high)`` per row of ``returns [P, S]`` (NaN entries ignored): mean +- one
    standard deviation (``std``), the 95% confidence interval of the mean (``ci95``:
    Student's t with S - 1 degrees of freedom), or the range across seeds (``minmax``)."""
    with warnings.catch_warnings():  # rows no seed reached are NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(returns, axis=1)
        if spread in ("std", "ci95"):
            std = np.nanstd(returns, axis=1, ddof=1 if spread == "ci95" else 0)
            if spread == "ci95":
                from scipy import stats

                count = np.sum(np.isfinite(returns), axis=1)
                half = stats.t.ppf(0.975, np.maximum(count - 1, 1)) * std / np.sqrt(count)
                half = np.where(count > 1, half, np.nan)
            else:
                half = std
            return mean, mean - half, mean + half
        return mean, np.nanmin(returns, axis=1), np.nanmax(returns, axis=1)


def run_label(run_dir: Path) -> str:
    """The label ``ALGO ENV`` from a run directory's config.json (its name without one)."""
    try:
        config = json.loads(RunDir(run_dir).config.read_text())
        return f"{config['algo'].upper()} {config['env']}"
    except (OSError, ValueError, KeyError):
        return run_dir.name


def _steps_formatter(value: float, _position: int) -> str:
    if abs(value) >= 1e6:
        return f"{value / 1e6:g}M"
    if abs(value) >= 1e3:
        return f"{value / 1e3:g}k"
    return f"{value:g}"


def plot_runs(
    run_dirs: Sequence[str | Path],
    output: str | Path,
    title: str | None = None,
    spread: Spread = "std",
    labels: Sequence[str] | None = None,
) -> Path:
    """Draw the learning curves of ``run_dirs`` in one figure and write it to ``output``
    (PNG; written to a temporary file and renamed, so a viewer never sees half a file).

    Args:
      run_dirs: run directories (each with an ``evals.csv``).
      output: the image path.
      title: figure title (default: the run's algorithm and environment for one run).
      spread: shading: ``"std"`` (mean +- one standard deviation across seeds), ``"ci95"``
        (95% confidence interval of the mean), ``"minmax"`` or ``"none"``.
      labels: legend labels (default: algorithm, environment and seed count, plus the
        directory name when two runs would share a label).

    Returns:
      The path written.
    """
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    run_dirs = [Path(d) for d in run_dirs]
    curves = [learning_curve(RunDir(d).evals_csv) for d in run_dirs]
    if labels is None:
        base = [run_label(d) for d in run_dirs]
        labels = [
            f"{name} ({len(seeds)} seed{'s' if len(seeds) != 1 else ''})"
            + (f" - {d.name}" if base.count(name) > 1 else "")
            for name, d, (_, _, seeds) in zip(base, run_dirs, curves, strict=True)
        ]
    figure = Figure(figsize=(7.5, 4.5), dpi=110, layout="constrained")
    axes = figure.subplots()
    for (steps, returns, _), label in zip(curves, labels, strict=True):
        if len(steps) == 0:
            continue
        mean, low, high = band(returns, spread)
        (line,) = axes.plot(steps, mean, marker="o", markersize=3, linewidth=1.8, label=label)
        if spread != "none" and returns.shape[1] > 1:
            axes.fill_between(steps, low, high, color=line.get_color(), alpha=0.2, linewidth=0)
        if np.isfinite(mean).any():
            best = int(np.nanargmax(mean))
            color = line.get_color()
            axes.plot(steps[best], mean[best], "*", color=color, markersize=13, zorder=3)
            axes.plot(steps[-1], mean[-1], "D", color=color, markersize=6, zorder=3)
    axes.set_xlabel("environment steps (per seed)")
    axes.set_ylabel("evaluation return")
    axes.xaxis.set_major_formatter(FuncFormatter(_steps_formatter))
    axes.grid(True, alpha=0.3)
    if title is None and len(run_dirs) == 1:
        title = (
            f"{run_label(run_dirs[0])}: mean "
            + {
                "std": "\u00b1 std across seeds",
                "ci95": "and 95% confidence interval",
                "minmax": "and min-max across seeds",
                "none": "across seeds",
            }[spread]
        )
    if title:
        axes.set_title(title)
    if any(len(c[0]) for c in curves):
        from matplotlib.lines import Line2D

        marks = [
            Line2D([], [], color="grey", marker=m, markersize=z, linestyle="", label=name)
            for m, z, name in (("*", 11, "best"), ("D", 5, "final"))
        ]
        axes.legend(handles=axes.get_legend_handles_labels()[0] + marks, loc="lower right")
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_name(output.stem + ".tmp" + output.suffix)
    figure.savefig(tmp)
    tmp.replace(output)
    return output
