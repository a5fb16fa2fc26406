"""Learning-curve figures (matplotlib, drawn off-screen): the mean evaluation return across
seeds against env steps, with the spread across seeds (or a confidence band of the mean)
shaded; each run's best and last evaluation during training and its final policy's
deterministic return marked, and the solved threshold (and, on MuJoCo tasks, Tianshou's
published result) drawn where one is known. The names are :mod:`jaxrl.runs.vocabulary`'s."""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from jaxrl.config.files import replace_file
from jaxrl.runs.metrics import learning_curve
from jaxrl.runs.run_dir import RunDir
from jaxrl.runs.vocabulary import (
    BEST_EVALUATION,
    DETERMINISTIC,
    LAST_EVALUATION,
    SOLVED_THRESHOLD,
    final_policy,
)

Spread = Literal["std", "ci95", "minmax", "none"]


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


# What the shading shows: in the title (after "mean") and on the legend's shaded patch.
SPREAD_TITLES: dict[str, str] = {
    "std": "\u00b1 std across seeds",
    "ci95": "and 95% confidence interval of the mean",
    "minmax": "and min-max across seeds",
    "none": "across seeds",
}
SPREAD_LABELS: dict[str, str] = {
    "std": "shaded: \u00b1 1 std across seeds",
    "ci95": "shaded: 95% CI of the mean (Student's t)",
    "minmax": "shaded: min-max across seeds",
}


def _run_config(run_dir: Path) -> dict | None:
    try:
        config = json.loads(RunDir(run_dir).config.read_text())
    except (OSError, ValueError):
        return None
    return config if isinstance(config, dict) else None


def run_env(run_dir: Path) -> str | None:
    """The environment id in a run directory's config.json (None without a readable one)."""
    env = (_run_config(run_dir) or {}).get("env")
    return env if isinstance(env, str) else None


def run_label(run_dir: Path) -> str:
    """The label ``ALGO ENV`` from a run directory's config.json (its name without one)."""
    config = _run_config(run_dir)
    try:
        return f"{config['algo'].upper()} {config['env']}"
    except (TypeError, KeyError, AttributeError):
        return run_dir.name


def default_title(run_dirs: Sequence[str | Path], spread: Spread) -> str:
    """``"TRPO Pendulum-v1: mean ± std across seeds"`` for one run; for several,
    ``"Pendulum-v1: 2 runs, mean and 95% confidence interval of each"`` (the environments they
    ran on, where their config.json says)."""
    run_dirs = [Path(d) for d in run_dirs]
    if len(run_dirs) == 1:
        return f"{run_label(run_dirs[0])}: mean {SPREAD_TITLES[spread]}"
    envs = list(dict.fromkeys(str((_run_config(d) or {}).get("env", "")) for d in run_dirs))
    where = ", ".join(e for e in envs if e)
    what = f"{len(run_dirs)} runs, mean {SPREAD_TITLES[spread]}"
    return f"{where}: {what}" if where else what


def _steps_formatter(value: float, _position: int) -> str:
    if abs(value) >= 1e6:
        return f"{value / 1e6:g}M"
    if abs(value) >= 1e3:
        return f"{value / 1e3:g}k"
    return f"{value:g}"


def learning_curve_figure(
    run_dirs: Sequence[str | Path],
    title: str | None = None,
    spread: Spread = "std",
    labels: Sequence[str] | None = None,
) -> Any:
    """The learning curves of ``run_dirs`` in one matplotlib ``Figure`` (not drawn on screen).

    Each run: its mean evaluation return across seeds against env steps (the evaluations
    during training, ``evals.csv``), shaded by ``spread``; its best evaluation (star) and last
    evaluation (diamond); its final policy's deterministic return (hollow square, where
    ``final_eval.json`` exists); Tianshou's published result for its algorithm on a MuJoCo
    task (dotted, in its colour). Every environment's solved threshold, where one is known, is
    a dashed grey line. With one run the legend gives each marker's value.

    Args:
      run_dirs: run directories (each with an ``evals.csv``).
      title: figure title (default: :func:`default_title`).
      spread: shading: ``"std"`` (mean +- one standard deviation across seeds), ``"ci95"``
        (95% confidence interval of the mean), ``"minmax"`` or ``"none"``.
      labels: legend labels (default: algorithm, environment and seed count, plus the
        directory name when two runs would share a label).
    """
    from matplotlib.figure import Figure

    run_dirs = [Path(d) for d in run_dirs]
    curves = [learning_curve(RunDir(d).evals_csv) for d in run_dirs]
    if labels is None:
        labels = _default_labels(run_dirs, curves)
    figure = Figure(figsize=(7.5, 4.5), dpi=110, layout="constrained")
    axes = figure.subplots()
    lines, marks = [], {}
    for run_dir, (steps, returns, _), label in zip(run_dirs, curves, labels, strict=True):
        if len(steps) == 0:
            continue
        line, run_marks = _plot_run(axes, run_dir, steps, returns, label, spread)
        lines.append(line)
        marks.update(run_marks)  # one legend entry per kind of mark, the last run's value
    _plot_solved_thresholds(axes, run_dirs)
    _label_axes(axes, default_title(run_dirs, spread) if title is None else title)
    if lines:
        shaded = spread in SPREAD_LABELS and any(c[1].shape[1] > 1 for c in curves)
        _add_legend(axes, SPREAD_LABELS[spread] if shaded else None, marks, len(run_dirs) == 1)
    return figure


# A legend entry for a kind of mark: (marker, marker size, face colour, the value it marks).
Mark = tuple[str, float, str, str]


def _default_labels(run_dirs: Sequence[Path], curves: Sequence[tuple]) -> list[str]:
    """``"ALGO ENV (S seeds)"`` per run (``curves``: :func:`learning_curve` of each), with
    `` - DIRECTORY`` added where two runs would share a label."""
    base = [run_label(d) for d in run_dirs]
    return [
        f"{name} ({len(seeds)} seed{'s' if len(seeds) != 1 else ''})"
        + (f" - {d.name}" if base.count(name) > 1 else "")
        for name, d, (_, _, seeds) in zip(base, run_dirs, curves, strict=True)
    ]


def _plot_run(
    axes: Any, run_dir: Path, steps: np.ndarray, returns: np.ndarray, label: str, spread: Spread
) -> tuple[Any, dict[str, Mark]]:
    """One run's curve: the mean of ``returns [P, S]`` against ``steps [P]`` shaded by
    ``spread`` (with more than one seed), its best and last evaluations, its final policy and
    Tianshou's published result, all in the curve's colour. Returns the curve's line and the
    legend entries of the marks drawn, by name."""
    mean, low, high = band(returns, spread)
    (line,) = axes.plot(steps, mean, marker="o", markersize=3, linewidth=1.8, label=label)
    color = line.get_color()
    if spread != "none" and returns.shape[1] > 1:
        axes.fill_between(steps, low, high, color=color, alpha=0.2, linewidth=0)
    marks = _mark_best_and_last(axes, steps, mean, color)
    marks.update(_mark_final_policy(axes, run_dir, color))
    _plot_published(axes, run_dir, color)
    return line, marks


def _mark_best_and_last(
    axes: Any, steps: np.ndarray, mean: np.ndarray, color: str
) -> dict[str, Mark]:
    """A star on the best and a diamond on the last of the mean returns ``mean [P]`` (none if
    no evaluation is finite); their legend entries."""
    if not np.isfinite(mean).any():
        return {}
    best = int(np.nanargmax(mean))
    last = len(steps) - 1
    axes.plot(steps[best], mean[best], "*", color=color, markersize=13, zorder=3)
    axes.plot(steps[last], mean[last], "D", color=color, markersize=6, zorder=3.5)
    return {
        BEST_EVALUATION: ("*", 11, "grey", f"{mean[best]:.1f} after {steps[best]:,.0f} env steps"),
        LAST_EVALUATION: ("D", 5, "grey", f"{mean[last]:.1f} after {steps[last]:,.0f} env steps"),
    }


def _mark_final_policy(axes: Any, run_dir: Path, color: str) -> dict[str, Mark]:
    """A hollow square at the final policy's mean deterministic return (where the run has a
    ``final_eval.json`` with every seed's return finite); its legend entry."""
    from jaxrl.runs.report import FinalEvaluation

    final = FinalEvaluation.load(RunDir(run_dir).final_eval)
    if final is None or not np.isfinite(final.deterministic).all():
        return {}
    value = float(np.mean(final.deterministic))
    axes.plot(
        final.env_steps,
        value,
        "s",
        color=color,
        markersize=10,
        markerfacecolor="none",
        markeredgewidth=2,
        zorder=4,
    )
    return {final_policy(DETERMINISTIC): ("s", 8, "none", f"{value:.1f} after training")}


def _plot_published(axes: Any, run_dir: Path, color: str) -> None:
    """Tianshou's published result for the run's algorithm and task, dotted (where there is
    one: MuJoCo tasks)."""
    from jaxrl.runs.published import tianshou_mujoco

    config = _run_config(run_dir) or {}
    published = tianshou_mujoco(str(config.get("algo", "")), str(config.get("env", "")))
    if published is None:
        return
    axes.axhline(
        published.mean,
        color=color,
        linestyle=":",
        linewidth=1.5,
        label=f"Tianshou's {published.algo.upper()} on {published.task}: "
        f"{published.mean:g} ({BEST_EVALUATION}, {published.env_steps:,} env steps)",
    )


def _plot_solved_thresholds(axes: Any, run_dirs: Sequence[Path]) -> None:
    """A dashed grey line at the solved threshold of each environment the runs trained on,
    where one is known (the environment named in its label when there are several)."""
    from jaxrl.runs.report import solved_threshold

    envs = dict.fromkeys(str((_run_config(d) or {}).get("env", "")) for d in run_dirs)
    for env in (e for e in envs if e):
        known = solved_threshold(env)
        if known is not None:
            where = f"{env}, " if len(envs) > 1 else ""
            axes.axhline(
                known[0],
                color="dimgrey",
                linestyle="--",
                linewidth=1.2,
                label=f"{SOLVED_THRESHOLD}: {known[0]:g} ({where}{known[1]})",
            )


def _label_axes(axes: Any, title: str) -> None:
    """Axis labels (env steps as ``10k``, ``1.5M``), a light grid and ``title`` (if any)."""
    from matplotlib.ticker import FuncFormatter

    axes.set_xlabel("environment steps (per seed)")
    axes.set_ylabel("evaluation return")
    axes.xaxis.set_major_formatter(FuncFormatter(_steps_formatter))
    axes.grid(True, alpha=0.3)
    if title:
        axes.set_title(title)


def _add_legend(axes: Any, spread_label: str | None, marks: dict[str, Mark], single: bool) -> None:
    """The legend: the plotted lines, a grey patch for the shading (``spread_label``, None
    where nothing is shaded) and a grey entry per kind of mark, with its value (``single``:
    one run)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = axes.get_legend_handles_labels()[0]
    if spread_label is not None:
        handles.append(Patch(color="grey", alpha=0.3, label=spread_label))
    for name, (marker, size, face, value) in marks.items():
        handles.append(
            Line2D(
                [],
                [],
                color="grey",
                marker=marker,
                markersize=size,
                linestyle="",
                markerfacecolor="grey" if face != "none" else "none",
                markeredgewidth=2 if face == "none" else 1,
                label=f"{name}: {value}" if single else name,
            )
        )
    axes.legend(handles=handles, loc="best", fontsize="small")


def plot_runs(
    run_dirs: Sequence[str | Path],
    output: str | Path,
    title: str | None = None,
    spread: Spread = "std",
    labels: Sequence[str] | None = None,
) -> Path:
    """Draw the learning curves of ``run_dirs`` in one figure
    (:func:`~jaxrl.runs.plots.learning_curve_figure`)
    and write it to ``output`` (PNG, its title in the file's ``Title`` metadata; written to a
    temporary file and renamed, so a viewer never sees half a file).

    Returns:
      The path written.
    """
    figure = learning_curve_figure(run_dirs, title=title, spread=spread, labels=labels)
    title = figure.axes[0].get_title()
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    return replace_file(
        output, lambda tmp: figure.savefig(tmp, metadata={"Title": title} if title else None)
    )
