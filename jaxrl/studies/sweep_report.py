"""What a sweep directory shows (:func:`~jaxrl.studies.sweep_report.write_summary`):

.. code-block:: text

    SWEEP_DIR/sweep.json       the resolved grid (the base run, the fields and their values)
    SWEEP_DIR/runs/SETTING/    one run directory per setting (what ``jaxrl train`` writes, so
                               ``jaxrl plot``, ``compare`` and ``evaluate`` work on each)
    SWEEP_DIR/sweep.csv        one row per setting and seed
    SWEEP_DIR/sweep.md         the ranking: per setting, mean +- std and 95% CI across seeds
    SWEEP_DIR/sweep.png        the ranking as a figure
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jaxrl.config.files import replace_file, write_dict_rows, write_text
from jaxrl.runs.metrics import read_csv
from jaxrl.runs.report import CurveSummary, FinalEvaluation
from jaxrl.studies.grid import cell


@dataclasses.dataclass(frozen=True)
class SweepResult:
    """What a sweep holds (finished settings only).

    Attributes:
      sweep_dir: the sweep directory.
      rows: one dict per setting and seed (the rows of ``sweep.csv``).
      ranking: one dict per setting, best first: ``setting``, its values, ``seeds``,
        ``mean``, ``std``, ``ci_low``, ``ci_high`` of the final policy's deterministic
        return across seeds.
      curves: setting name -> its evaluations during training
        (:class:`~jaxrl.runs.report.CurveSummary`).
      finished: settings finished.
      total: settings in the grid.
    """

    sweep_dir: Path
    rows: list[dict[str, Any]]
    ranking: list[dict[str, Any]]
    curves: dict[str, CurveSummary]
    finished: int
    total: int


def finished(run_dir: Path) -> bool:
    """Whether the setting in ``run_dir`` finished (its ``final_eval.json``)."""
    return (run_dir / "final_eval.json").is_file()


def _row(setting: Any, run_dir: Path, fields: Sequence[str]) -> list[dict[str, Any]]:
    final = FinalEvaluation.load(run_dir / "final_eval.json")
    curve = CurveSummary.load(run_dir / "evals.csv")
    best, last = curve.best, curve.last
    wall = float(np.nanmax(read_csv(run_dir / "evals.csv")["wall_time"]))
    rows = []
    for seed in range(curve.num_seeds):
        row = {"setting": setting.name}
        row.update({name: cell(setting.values[name]) for name in fields})
        row.update(
            seed=setting.config.seed + seed,
            final_return=float(final.deterministic[seed]),
            best_evaluation=float(curve.returns[best, seed]),
            last_evaluation=float(curve.returns[last, seed]),
            env_steps=int(final.env_steps),
            wall_time=round(wall, 3),
        )
        rows.append(row)
    return rows


def ranking(rows: Sequence[dict[str, Any]], fields: Sequence[str]) -> list[dict[str, Any]]:
    """Per setting: mean, std and 95% CI (Student's t) across seeds of ``final_return``,
    best mean first."""
    from jaxrl.runs.plots import band
    from jaxrl.studies.statistics import bootstrap_interval, iqm

    ranked = []
    for name in dict.fromkeys(row["setting"] for row in rows):
        own = [row for row in rows if row["setting"] == name]
        returns = np.asarray([row["final_return"] for row in own], np.float64)
        mean, low, high = band(returns[None, :], "ci95")
        entry = {"setting": name, **{f: own[0][f] for f in fields}, "seeds": len(own)}
        entry.update(mean=float(mean[0]), std=float(returns.std()))
        entry.update(ci_low=float(low[0]), ci_high=float(high[0]))
        iqm_low, iqm_high = bootstrap_interval(returns)
        entry.update(iqm=iqm(returns), iqm_low=iqm_low, iqm_high=iqm_high)
        ranked.append(entry)
    return sorted(ranked, key=lambda entry: -entry["mean"])


def write_summary(path: Path, settings: Sequence[Any], fields: Sequence[str]) -> SweepResult:
    """``sweep.csv``, ``sweep.md`` and ``sweep.png`` of the finished ``settings``
    (:class:`jaxrl.studies.grid.Setting`)."""
    rows: list[dict[str, Any]] = []
    curves = {}
    for setting in settings:
        run_dir = path / "runs" / setting.name
        if finished(run_dir):
            rows.extend(_row(setting, run_dir, fields))
            curves[setting.name] = CurveSummary.load(run_dir / "evals.csv")
    if rows:
        write_dict_rows(path / "sweep.csv", rows, list(rows[0]))
    ranked = ranking(rows, fields)
    write_text(path / "sweep.md", ranking_markdown(ranked, fields, len(settings)))
    if ranked:
        _ranking_figure(ranked, path / "sweep.png")
    return SweepResult(path, rows, ranked, curves, len(curves), len(settings))


def ranking_markdown(ranked: Sequence[dict[str, Any]], fields: Sequence[str], total: int) -> str:
    """The ranking as a Markdown table (the final policy's deterministic return)."""
    lines = [
        f"# Sweep ranking ({len(ranked)} of {total} settings finished)",
        "",
        "Final policy, deterministic return: mean +- std and 95% CI of the mean across seeds; "
        "interquartile mean and its 95% stratified bootstrap CI.",
        "",
        "| rank | " + " | ".join(fields) + " | seeds | mean +- std | 95% CI | IQM [95% CI] |",
        "|---|" + "---|" * len(fields) + "---|---|---|---|",
    ]
    for rank, entry in enumerate(ranked, 1):
        values = " | ".join(str(entry[f]) for f in fields)
        interval = "n/a (one seed)"
        if np.isfinite(entry["ci_low"]):
            interval = f"[{entry['ci_low']:.1f}, {entry['ci_high']:.1f}]"
        robust = f"{entry['iqm']:.1f}"
        if np.isfinite(entry["iqm_low"]):
            robust += f" [{entry['iqm_low']:.1f}, {entry['iqm_high']:.1f}]"
        spread = f" +- {entry['std']:.1f}" if entry["seeds"] > 1 else ""  # none of one seed
        lines.append(
            f"| {rank} | {values} | {entry['seeds']} | {entry['mean']:.1f}{spread}"
            f" | {interval} | {robust} |"
        )
    return "\n".join(lines) + "\n"


def _ranking_figure(ranked: Sequence[dict[str, Any]], path: Path) -> None:
    from matplotlib.figure import Figure

    height = 1.2 + 0.35 * len(ranked)
    figure = Figure(figsize=(7.5, height), dpi=110, layout="constrained")
    axes = figure.add_subplot()
    order = list(reversed(ranked))
    y = np.arange(len(order))
    means = np.asarray([e["mean"] for e in order])
    low = means - np.asarray([e["ci_low"] for e in order])
    high = np.asarray([e["ci_high"] for e in order]) - means
    axes.errorbar(means, y, xerr=np.nan_to_num([low, high]), fmt="o", capsize=3)
    axes.set_yticks(y, [e["setting"] for e in order], fontsize=8)
    axes.set_xlabel("final policy, deterministic return (mean and 95% CI across seeds)")
    axes.grid(axis="x", alpha=0.3)
    replace_file(path, figure.savefig)
