"""``jaxrl compare``: several runs side by side, as a figure (learning curves with 95%
confidence bands of the mean across seeds) and a table of final and best returns."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jaxrl.io.plots import Spread, band, plot_runs, run_label
from jaxrl.io.report import CurveSummary, FinalEvaluation
from jaxrl.io.run_dir import RunDir


def _mean_ci(values: np.ndarray) -> dict[str, float]:
    """Mean, standard deviation and 95% confidence interval (Student's t) across seeds."""
    values = values[np.isfinite(values)]
    mean, low, high = band(values[None, :], "ci95")
    return {
        "mean": float(mean[0]),
        "std": float(values.std()),
        "ci_low": float(low[0]),
        "ci_high": float(high[0]),
    }


def compare_rows(
    run_dirs: Sequence[str | Path], labels: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """One row per run: ``run`` (label), ``seeds``, ``final`` (its last evaluation during
    training), ``best`` (the evaluation with the best mean, and ``best_steps``), and, where
    the run finished, ``deterministic`` and ``stochastic`` (its final policy's evaluations);
    each statistic is ``{mean, std, ci_low, ci_high}`` across seeds."""
    dirs = [RunDir(Path(d)) for d in run_dirs]
    labels = list(labels) if labels is not None else _labels(dirs)
    rows = []
    for run_dir, label in zip(dirs, labels, strict=True):
        curve = CurveSummary.load(run_dir.evals_csv)
        row: dict[str, Any] = {"run": label, "run_dir": str(run_dir.path)}
        row["seeds"] = curve.num_seeds
        if curve.last is not None and curve.best is not None:
            row["final_steps"] = int(curve.steps[curve.last])
            row["final"] = _mean_ci(curve.returns[curve.last])
            row["best_steps"] = int(curve.steps[curve.best])
            row["best"] = _mean_ci(curve.returns[curve.best])
        final = FinalEvaluation.load(run_dir.final_eval)
        if final is not None:
            row["deterministic"] = _mean_ci(final.deterministic)
            if final.stochastic is not None:
                row["stochastic"] = _mean_ci(final.stochastic)
        rows.append(row)
    return rows


def _labels(dirs: list[RunDir]) -> list[str]:
    base = [run_label(d.path) for d in dirs]
    return [
        name + (f" ({d.path.name})" if base.count(name) > 1 else "")
        for name, d in zip(base, dirs, strict=True)
    ]


def _cell(stat: dict[str, float] | None) -> str:
    if stat is None:
        return "-"
    if not np.isfinite(stat["ci_low"]):
        return f"{stat['mean']:.1f}"
    return f"{stat['mean']:.1f} +- {stat['std']:.1f} [{stat['ci_low']:.1f}, {stat['ci_high']:.1f}]"


def format_table(rows: list[dict[str, Any]]) -> str:
    """A plain-text table of :func:`compare_rows` (mean +- std [95% CI] across seeds)."""
    header = ["run", "seeds", "last eval", "best eval (env steps)", "final deterministic"]
    body = [
        [
            row["run"],
            str(row["seeds"]),
            _cell(row.get("final")),
            _cell(row.get("best")) + (f" ({row['best_steps']:,})" if "best_steps" in row else ""),
            _cell(row.get("deterministic")),
        ]
        for row in rows
    ]
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in [header, *body]
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def compare_runs(
    run_dirs: Sequence[str | Path],
    output: str | Path,
    labels: Sequence[str] | None = None,
    title: str | None = None,
    spread: Spread = "ci95",
) -> tuple[Path, list[dict[str, Any]]]:
    """Draw ``run_dirs``' learning curves in one figure (``output``) and return it with the
    table rows (:func:`compare_rows`)."""
    rows = compare_rows(run_dirs, labels)
    labels = [f"{row['run']} ({row['seeds']} seeds)" for row in rows]
    path = plot_runs(run_dirs, output, title=title, spread=spread, labels=labels)
    return path, rows
