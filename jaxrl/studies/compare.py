"""``jaxrl compare``: several runs side by side, as a figure (learning curves with 95%
confidence bands of the mean across seeds) and a table of each run's last evaluation, best
evaluation and final policy (the names of :mod:`jaxrl.runs.vocabulary`, as in the end-of-run
report and the learning-curve figure)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jaxrl.runs.plots import Spread, band, default_title, plot_runs, run_env, run_label
from jaxrl.runs.report import CurveSummary, FinalEvaluation
from jaxrl.runs.run_dir import RunDir
from jaxrl.runs.vocabulary import (
    BEST_EVALUATION,
    DETERMINISTIC,
    LAST_EVALUATION,
    STOCHASTIC,
    final_policy,
)


def _mean_ci(values: np.ndarray) -> dict[str, float]:
    """Mean, standard deviation and 95% confidence interval (Student's t) across seeds; the
    interquartile mean and its 95% stratified bootstrap interval (:mod:`jaxrl.studies.statistics`).
    """
    from jaxrl.studies.statistics import bootstrap_interval, iqm

    values = values[np.isfinite(values)]
    mean, low, high = band(values[None, :], "ci95")
    iqm_low, iqm_high = bootstrap_interval(values)
    return {
        "mean": float(mean[0]),
        "std": float(values.std()),
        "ci_low": float(low[0]),
        "ci_high": float(high[0]),
        "iqm": iqm(values),
        "iqm_low": iqm_low,
        "iqm_high": iqm_high,
    }


def compare_rows(
    run_dirs: Sequence[str | Path], labels: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """One row per run: ``run`` (label), ``run_dir``, ``env`` (None without a readable
    ``config.json``), ``seeds``, ``last_evaluation`` (its last
    evaluation during training, at ``last_evaluation_steps``), ``best_evaluation`` (the
    evaluation during training with the best mean, at ``best_evaluation_steps``), and, where
    the run finished, ``final_policy``: ``{env_steps, episodes, deterministic, stochastic}``
    (its final policy's evaluations after training; ``stochastic`` for NPG/TRPO). Each
    statistic is ``{mean, std, ci_low, ci_high}`` across seeds."""
    dirs = [RunDir(Path(d)) for d in run_dirs]
    labels = list(labels) if labels is not None else _labels(dirs)
    rows = []
    for run_dir, label in zip(dirs, labels, strict=True):
        curve = CurveSummary.load(run_dir.evals_csv)
        row: dict[str, Any] = {"run": label, "run_dir": str(run_dir.path)}
        row["env"] = run_env(run_dir.path)
        row["seeds"] = curve.num_seeds
        if curve.last is not None and curve.best is not None:
            row["last_evaluation_steps"] = int(curve.steps[curve.last])
            row["last_evaluation"] = _mean_ci(curve.returns[curve.last])
            row["best_evaluation_steps"] = int(curve.steps[curve.best])
            row["best_evaluation"] = _mean_ci(curve.returns[curve.best])
        final = FinalEvaluation.load(run_dir.final_eval)
        if final is not None:
            policy: dict[str, Any] = {"env_steps": final.env_steps, "episodes": final.episodes}
            policy[DETERMINISTIC] = _mean_ci(final.deterministic)
            policy["returns"] = [float(r) for r in final.deterministic]
            if final.stochastic is not None:
                policy[STOCHASTIC] = _mean_ci(final.stochastic)
            row["final_policy"] = policy
        rows.append(row)
    return rows


# Settings that do not change what a run computes: a difference in them names no run.
_NOT_A_DIFFERENCE = frozenset({"checkpoint_every", "checkpoint_buffer", "check_finite"})


def _settings(run_dir: RunDir) -> dict[str, Any] | None:
    """A run's preset, hyperparameters and run settings from its ``config.json`` (None
    without a readable one)."""
    import json

    try:
        config = json.loads(run_dir.config.read_text())
        values = {"preset": config.get("preset")}
        values.update(config.get("hyperparameters") or {})
        values.update(config.get("run") or {})
    except (OSError, ValueError, AttributeError, TypeError):
        return None
    return {k: v for k, v in values.items() if k not in _NOT_A_DIFFERENCE}


def _spelled(value: Any) -> str:
    """A setting's value as a label shows it: ``0.005``, ``64x64`` (layer sizes), ``None``."""
    if isinstance(value, list) and value and all(isinstance(v, int) for v in value):
        return "x".join(map(str, value))
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def differing_settings(run_dirs: Sequence[str | Path]) -> list[dict[str, Any]]:
    """Each run's settings (preset, hyperparameters, run settings) that differ between the
    runs, as ``{name: value}``: empty for a run without a readable ``config.json``, and for
    every run where they all agree."""
    settings = [_settings(RunDir(Path(d))) for d in run_dirs]
    known = [s for s in settings if s is not None]
    names = sorted({name for s in known for name in s})
    differ = [n for n in names if len({repr(s.get(n)) for s in known}) > 1]
    return [{} if s is None else {n: s.get(n) for n in differ} for s in settings]


def _labels(dirs: list[RunDir]) -> list[str]:
    """``ALGO ENV`` per run and, where runs on the same environment differ in settings, the
    settings each has (``TRPO Pendulum-v1 max_kl=0.02``); a label two runs would still share
    gets the run's directory name."""
    base = [run_label(d.path) for d in dirs]
    envs = [run_env(d.path) for d in dirs]
    differing: list[dict[str, Any]] = [{} for _ in dirs]
    for env in set(envs):
        same = [i for i, e in enumerate(envs) if e == env]
        for i, own in zip(same, differing_settings([dirs[i].path for i in same]), strict=True):
            differing[i] = own
    labels = [
        " ".join([name, *(f"{k}={_spelled(v)}" for k, v in own.items())])
        for name, own in zip(base, differing, strict=True)
    ]
    return [
        label + (f" ({d.path.name})" if labels.count(label) > 1 else "")
        for label, d in zip(labels, dirs, strict=True)
    ]


def _cell(stat: dict[str, float] | None) -> str:
    if stat is None:
        return "-"
    if not np.isfinite(stat["ci_low"]):
        return f"{stat['mean']:.1f}"
    return f"{stat['mean']:.1f} +- {stat['std']:.1f} [{stat['ci_low']:.1f}, {stat['ci_high']:.1f}]"


def table_columns(rows: list[dict[str, Any]]) -> list[str]:
    """The table's column names: ``run``, ``seeds``, ``last evaluation``, ``best evaluation
    (env steps)``, ``final policy, deterministic`` and, where a run has one, ``final policy,
    stochastic``."""
    columns = ["run", "seeds", LAST_EVALUATION, f"{BEST_EVALUATION} (env steps)"]
    columns.append(final_policy(DETERMINISTIC))
    if any(STOCHASTIC in row.get("final_policy", {}) for row in rows):
        columns.append(final_policy(STOCHASTIC))
    return columns


def format_table(rows: list[dict[str, Any]]) -> str:
    """A plain-text table of :func:`compare_rows` (mean +- std [95% CI] across seeds), its
    columns :func:`table_columns`."""
    header = table_columns(rows)
    body = []
    for row in rows:
        best = _cell(row.get("best_evaluation"))
        if "best_evaluation_steps" in row:
            best += f" ({row['best_evaluation_steps']:,})"
        policy = row.get("final_policy", {})
        cells = [row["run"], str(row["seeds"]), _cell(row.get("last_evaluation")), best]
        cells.append(_cell(policy.get(DETERMINISTIC)))
        if len(header) > len(cells):
            cells.append(_cell(policy.get(STOCHASTIC)))
        body.append(cells)
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in [header, *body]
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def robust_lines(rows: list[dict[str, Any]], improvement: bool = True) -> list[str]:
    """Lines on the final policies' deterministic returns across seeds: each run's
    interquartile mean with its 95% stratified bootstrap interval, and (``improvement``) the
    probability that a seed of the first run beats a seed of each other
    (:mod:`jaxrl.studies.statistics`)."""
    finished = [row for row in rows if "final_policy" in row]
    if not finished:
        return []
    lines = [f"{final_policy(DETERMINISTIC)}: interquartile mean [95% stratified bootstrap CI]"]
    for row in finished:
        stat = row["final_policy"][DETERMINISTIC]
        interval = "n/a (one seed)"
        if np.isfinite(stat["iqm_low"]):
            interval = f"[{stat['iqm_low']:.1f}, {stat['iqm_high']:.1f}]"
        lines.append(f"  {row['run']}: {stat['iqm']:.1f} {interval}")
    for entry in improvements(rows) if improvement else ():
        lines.append(
            f"P({entry['run']} > {entry['other']}) = {entry['probability']:.2f} (a seed of each)"
        )
    others = [r["run"] for r in finished[1:] if not _comparable(finished[0], r)]
    others = others if improvement else []
    if others:
        lines.append(
            f"No P({finished[0]['run']} > ...) for {', '.join(others)}: another environment's "
            "returns are not comparable (--normalize tianshou compares runs across tasks)"
        )
    return lines


def _comparable(first: dict[str, Any], row: dict[str, Any]) -> bool:
    """Whether ``row``'s returns compare with ``first``'s: the same environment, or one of
    them unknown (no readable ``config.json``)."""
    return None in (first.get("env"), row.get("env")) or row["env"] == first["env"]


def improvements(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The probability of improvement of the first finished run over each other finished
    run on the same environment (that a seed of the first beats a seed of the other on the
    final policy's deterministic return; ties count one half): ``{run, other,
    probability}`` each. Runs on another environment are left out: their returns are not
    comparable."""
    from jaxrl.studies.statistics import probability_of_improvement

    finished = [row for row in rows if "final_policy" in row]
    return [
        {
            "run": finished[0]["run"],
            "other": other["run"],
            "probability": float(
                probability_of_improvement(
                    np.asarray(finished[0]["final_policy"]["returns"]),
                    np.asarray(other["final_policy"]["returns"]),
                )
            ),
        }
        for other in finished[1:]
        if _comparable(finished[0], other)
    ]


def profile_figure(
    rows: list[dict[str, Any]], path: str | Path, groups: Sequence[Any] = ()
) -> Path:
    """A performance profile of the final policies' deterministic returns: per run, the
    fraction of seeds whose return exceeds each threshold; with ``groups``
    (:class:`jaxrl.studies.normalized.Group`), per group, the fraction of its normalized scores
    (the mean over tasks of each task's fraction of seeds) above each threshold."""
    if groups:
        scores = {f"{g.label} ({len(g.tasks)} tasks)": g.scores for g in groups}
        return _draw_profile(
            scores,
            "threshold: normalized score",
            "fraction of seeds above it, mean over tasks",
            path,
        )
    finished = [row for row in rows if "final_policy" in row]
    if not finished:
        raise ValueError("--profile: no run has finished (no final policy to profile)")
    scores = {
        f"{row['run']} ({row['seeds']} seeds)": np.asarray(row["final_policy"]["returns"])
        for row in finished
    }
    xlabel = "threshold: final policy, deterministic return"
    return _draw_profile(scores, xlabel, "fraction of seeds above it", path)


def _draw_profile(
    scores: dict[str, np.ndarray], xlabel: str, ylabel: str, path: str | Path
) -> Path:
    """Performance profiles (:func:`~jaxrl.studies.statistics.performance_profile`) of each
    label's ``scores`` (``[seeds]`` or ``[seeds, tasks]``), over thresholds spanning them."""
    from matplotlib.figure import Figure

    from jaxrl.studies.statistics import performance_profile

    every = np.concatenate([np.ravel(s) for s in scores.values()])
    thresholds = np.linspace(every.min(), every.max(), 201)
    figure = Figure(figsize=(6.5, 4.2), dpi=110, layout="constrained")
    axes = figure.add_subplot()
    for label, values in scores.items():
        fraction = performance_profile(values, thresholds)
        axes.step(thresholds, fraction, where="post", label=label)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_ylim(-0.02, 1.02)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    path = Path(path)
    figure.savefig(path)
    return path


def compare_runs(
    run_dirs: Sequence[str | Path],
    output: str | Path,
    labels: Sequence[str] | None = None,
    title: str | None = None,
    spread: Spread = "ci95",
) -> tuple[Path, list[dict[str, Any]]]:
    """Draw ``run_dirs``' learning curves in one figure (``output``; its title by default
    :func:`jaxrl.runs.plots.default_title`, which names the shading) and return it with the
    table rows (:func:`compare_rows`)."""
    rows = compare_rows(run_dirs, labels)
    labels = [f"{row['run']} ({row['seeds']} seeds)" for row in rows]
    title = default_title(run_dirs, spread) if title is None else title
    path = plot_runs(run_dirs, output, title=title, spread=spread, labels=labels)
    return path, rows


def default_output(run_dirs: Sequence[str | Path]) -> Path:
    """Where ``jaxrl compare`` writes its figure without ``-o``: next to the first run
    directory (in its parent), named after the runs compared (``compare-A-vs-B.png``), so a
    comparison of other runs does not replace it; a name too long for a file ends in a
    digest of the whole."""
    import hashlib

    dirs = [Path(os.path.abspath(d)) if Path(d).name in ("", ".", "..") else Path(d)
            for d in run_dirs]  # fmt: skip  # "." or "..": named by the real directory
    stem = "compare-" + "-vs-".join(d.name for d in dirs)
    if len(stem) > 120:
        digest = hashlib.sha1(stem.encode()).hexdigest()[:8]
        stem = f"{stem[:100]}-{digest}"
    return dirs[0].parent / f"{stem}.png"
