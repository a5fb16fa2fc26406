"""What a tuning directory shows (:func:`~jaxrl.studies.tuning_report.write_summary`):

.. code-block:: text

    TUNE_DIR/tune.json        what is tuned: the base run, the search space, the objective
    TUNE_DIR/study.log        the study (Optuna's journal file; ``storage`` chooses another)
    TUNE_DIR/trials/trial-N/  one run directory per trial (``jaxrl plot`` etc. work on each)
    TUNE_DIR/tune.csv         one row per trial: its state, objective and values
    TUNE_DIR/tune.md          the trials ranked by objective, and the best trial's command
    TUNE_DIR/best.json        the best trial's values as a preset file (``--preset-file``)
    TUNE_DIR/history.png      Optuna's optimization history; importances.png: the values'
                              importances (from two finished trials on)
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Container, Mapping, Sequence
from pathlib import Path
from typing import Any

from jaxrl.config.files import replace_file, write_dict_rows, write_text
from jaxrl.config.run_config import RunConfig
from jaxrl.studies.search_space import Dimension, label


@dataclasses.dataclass(frozen=True)
class TuneResult:
    """What a study holds.

    Attributes:
      tune_dir: the tuning directory.
      study: the Optuna study.
      rows: one dict per trial (the rows of ``tune.csv``).
      best: the best complete trial's row, or None.
      complete: the complete trials.
      pruned: the pruned trials.
      failed: the failed trials.
      running: the trials running.
    """

    tune_dir: Path
    study: Any
    rows: list[dict[str, Any]]
    best: dict[str, Any] | None
    complete: int
    pruned: int
    failed: int
    running: int


def objective_text(objective_evals: int) -> str:
    """What a study's objective is, in words (``tune.json``, preset files)."""
    return f"mean over seeds of the mean of the last {objective_evals} evaluations"


def write_summary(
    path: Path, study: Any, space: Sequence[Dimension], base: RunConfig, objective_evals: int
) -> TuneResult:
    """``tune.csv``, ``tune.md``, ``best.json`` and the figures of the study so far."""
    import optuna

    states = optuna.trial.TrialState
    rows = []
    for trial in study.get_trials(deepcopy=False):
        row = {"trial": trial.number, "state": trial.state.name.lower()}
        row["objective"] = trial.value if trial.state == states.COMPLETE else None
        row.update({d.name: trial.params.get(d.name) for d in space})
        row["env_steps"] = trial.user_attrs.get("env_steps")
        row["seeds"] = " ".join(map(str, trial.user_attrs.get("seeds", [])))
        rows.append(row)
    # The trial of the base run's own values (enqueued first), named so in the table.
    bases = {t.number for t in study.get_trials(deepcopy=False) if t.user_attrs.get("base")}
    columns = ["trial", "state", "objective", *[d.name for d in space], "env_steps", "seeds"]
    write_dict_rows(path / "tune.csv", rows, columns)
    complete = sorted(
        (r for r in rows if r["state"] == "complete"), key=lambda r: -float(r["objective"])
    )
    best = complete[0] if complete else None
    count = {s: sum(r["state"] == s for r in rows) for s in ("complete", "pruned", "fail")}
    running = sum(r["state"] == "running" for r in rows)
    if best is not None:
        _write_preset_file(
            path / "best.json", study.study_name, base, space, best, len(rows), objective_evals
        )
    pruned_steps = [int(r["env_steps"] or 0) for r in rows if r["state"] == "pruned"]
    markdown = _markdown(path, base, space, complete, count, running, pruned_steps, bases)
    write_text(path / "tune.md", markdown)
    _figures(path, study, len(complete))
    return TuneResult(
        path, study, rows, best, count["complete"], count["pruned"], count["fail"], running
    )


def values_of(row: Mapping[str, Any], space: Sequence[Dimension]) -> dict[str, Any]:
    """A trial's values as the run takes them (labels read back as values)."""
    values = {}
    for dim in space:
        value = row[dim.name]
        if dim.kind == "categorical":
            value = dim.choices[[label(c) for c in dim.choices].index(value)]
        values[dim.name] = list(value) if isinstance(value, tuple) else value
    return values


# Run settings a preset file leaves out: the seeds (the report's own), and how or where a
# run is carried out, which does not change what it learns.
_NOT_IN_PRESET_FILE = (
    "seed",
    "num_seeds",
    "checkpoint_every",
    "checkpoint_buffer",
    "check_finite",
    "env_backend",
    "brax_backend",
)


def _write_preset_file(
    file: Path,
    study_name: str,
    base: RunConfig,
    space: Sequence[Dimension],
    best: dict,
    total: int,
    objective_evals: int,
) -> None:
    from jaxrl.config.settings import settings_fields

    values = values_of(best, space)
    run_names = {f.name for f in settings_fields()}
    # The base run's own departures from its preset come along (a trial is base + values);
    # what only says how or where to run does not.
    reference = RunConfig.from_preset(base.algo, base.env, base.preset, backend=base.backend)
    own, preset_values = base.to_dict(), reference.to_dict()
    hyper = {
        k: v
        for k, v in own["hyperparameters"].items()
        if preset_values["hyperparameters"].get(k) != v
    }
    run = {k: v for k, v in own["run"].items() if preset_values["run"].get(k) != v}
    run = {k: v for k, v in run.items() if k not in _NOT_IN_PRESET_FILE}
    hyper.update({k: v for k, v in values.items() if k not in run_names})
    run.update({k: v for k, v in values.items() if k in run_names})
    seeds = [base.seed + i for i in range(base.num_seeds)]
    preset = {
        "algo": base.algo,
        "env": base.env,
        "preset": base.preset,
        "hyperparameters": hyper,
        "run": run,
        "search_seeds": seeds,
        "provenance": {
            "study": study_name,
            "trial": best["trial"],
            "objective": best["objective"],
            "objective_is": objective_text(objective_evals),
            "search": [d.describe() for d in space],
            "trials_in_study": total,
            "env_steps_per_trial": base.layout.total_steps,
        },
    }
    write_text(file, json.dumps(preset, indent=2) + "\n")


def _pruning_line(pruned_steps: Sequence[int], pruned: int, total: int) -> str:
    """What pruning saved: the env steps pruned trials did not train."""
    if not pruned:
        return "Pruning: no trial pruned."
    saved = pruned * total - sum(pruned_steps)
    return (
        f"Pruning: {pruned} trials pruned after {sum(pruned_steps):,} of their "
        f"{pruned * total:,} env steps per seed: {saved:,} saved ({saved / (pruned * total):.0%})."
    )


def _markdown(
    path: Path,
    base: RunConfig,
    space: Sequence[Dimension],
    complete: Sequence[dict],
    count: Mapping[str, int],
    running: int,
    pruned_steps: Sequence[int],
    bases: Container[int] = (),
) -> str:
    names = [d.name for d in space]
    seeds = f"{base.seed}-{base.seed + base.num_seeds - 1}"
    total = base.layout.total_steps
    lines = [
        f"# Tuning {base.algo.upper()} on {base.env}",
        "",
        f"{count['complete']} complete, {count['pruned']} pruned, {count['fail']} failed, "
        f"{running} running. Search seeds {seeds}; {base.layout.total_steps:,} env steps per "
        "trial; objective: mean over seeds of the mean of the last evaluations.",
        "",
        "Search: " + " ".join(f"`{d.describe()}`" for d in space),
        "",
        _pruning_line(pruned_steps, count["pruned"], total),
        "",
        "| rank | trial | objective | " + " | ".join(names) + " |",
        "|---|---|---|" + "---|" * len(names),
    ]
    for rank, row in enumerate(complete[:20], 1):
        values = " | ".join(_rounded(row[n]) for n in names)
        trial = f"{row['trial']} (base)" if row["trial"] in bases else str(row["trial"])
        lines.append(f"| {rank} | {trial} | {row['objective']:.1f} | {values} |")
    if any(row["trial"] in bases for row in complete[:20]):
        lines += ["", f"(base): the base run's own values ({_base_words(base)}), tried first."]
    if 2 <= len(complete) < FEW_TRIALS:  # importances.png is drawn from two complete trials
        lines += [
            "",
            f"importances.png rests on {len(complete)} complete trials: with fewer than "
            f"{FEW_TRIALS} it is mostly noise (which field matters is not known yet).",
        ]
    if complete:
        lines += [
            "",
            "Report the best on seeds no search used (the preset file refuses the search seeds):",
            "",
            f"    jaxrl train {base.algo} --preset-file {path / 'best.json'} --num-seeds 10",
        ]
    return "\n".join(lines) + "\n"


# Complete trials below which the report calls Optuna's importances noise: fANOVA fits a
# random forest to the trials' objectives, and a few points fit any field.
FEW_TRIALS = 20


def _rounded(value: Any) -> str:
    """A searched value for the table: floats to 4 significant digits (``tune.csv`` keeps
    them whole), anything else as written."""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _base_words(base: RunConfig) -> str:
    return f"the {base.preset} preset's" if getattr(base, "preset", None) else "the defaults"


def _figures(path: Path, study: Any, complete: int) -> None:
    """Optuna's optimization history and (from two complete trials) importances."""
    if complete < 1:
        return
    import warnings

    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    from optuna.visualization import matplotlib as figures

    drawings = [("history.png", figures.plot_optimization_history)]
    if complete >= 2:
        drawings.append(("importances.png", figures.plot_param_importances))
    for name, draw in drawings:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Optuna marks its matplotlib figures experimental
            try:
                axes = draw(study)
            except (ValueError, RuntimeError):  # e.g. importances of a single-valued space
                continue
        replace_file(
            path / name, lambda tmp, f=axes.figure: f.savefig(tmp, dpi=110, bbox_inches="tight")
        )
        plt.close(axes.figure)
