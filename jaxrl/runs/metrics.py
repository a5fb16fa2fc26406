"""Metrics of a run on disk: CSV tables (one row per seed and update, one per seed and
evaluation) and TensorBoard event files (one run per seed).

``updates.csv`` columns: ``seed, period, update, env_steps, train_return`` and the means of
the agent's statistics (``actor_loss``, ``critic_loss``, ``kl``, ...; one table of them per
algorithm in docs/guides/research.md). ``evals.csv`` columns:
``seed, period, env_steps, eval_return, wall_time``. ``seed`` is the index of the seed in
the run, ``period`` the evaluation period (1-based) the row belongs to. A statistic that first
appears after the first rows (DDPG's losses, after a random warm-up longer than a period)
becomes a column then; the earlier rows' cells are empty. A statistic's earlier name
(:data:`~jaxrl.runs.metrics.RENAMED_COLUMNS`) reads as its name now, and a resumed run
renames it in the file.

TensorBoard (``tensorboard/seed_<i>``) holds ``eval/return`` at every evaluation and the
update statistics ``train/<name>`` at most once per ``TENSORBOARD_ENV_STEPS`` env steps
of a seed: the mean of that window's finite values (Tianshou's logger writes them every
1,000 gradient steps, its ``update_interval``). ``updates.csv`` keeps every row: DDPG has one
per env step, a million per seed at Tianshou's MuJoCo budget.

``evals.csv`` holds the evaluations *during training* (the first, at step 0, is the initial
policy's): its last rows are the run's *last evaluation*, the row with the best mean across
seeds its *best evaluation*. The *final policy*'s evaluation after training is not in it but
in ``final_eval.json`` (:mod:`jaxrl.runs.vocabulary`).

Rows travel as :data:`Columns`: a period's 160,000 rows (DDPG, 16 seeds x 10,000 env
steps) are a few arrays, written and averaged without a Python object per row.
"""

from __future__ import annotations

import csv
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jaxrl.config.files import RUN_REMEDY, read_csv_rows, replace_file
from jaxrl.runs.run_dir import RunDir

UPDATE_COLUMNS = ("seed", "period", "update", "env_steps", "train_return")
EVAL_COLUMNS = ("seed", "period", "env_steps", "eval_return", "wall_time")
TENSORBOARD_ENV_STEPS = 1_000
"""Env steps of a seed per TensorBoard point of the update statistics."""

Columns = Mapping[str, Any]
"""Rows kept as columns, ``{name: [R] values}``, every column of the same length ``R``
(arrays or lists of numbers; NaN is a missing value)."""

_INDEX_COLUMNS = ("seed", "period", "update", "env_steps")

RENAMED_COLUMNS = {"vf_loss": "critic_loss"}
"""The earlier names of statistics in ``updates.csv``, each to its name now (NPG's and TRPO's
critic loss was ``vf_loss``): :func:`read_csv` reads a file written before the rename under
today's names, and a resumed run's :func:`truncate_csv` renames its header."""


def current_names(header: Sequence[str]) -> list[str]:
    """``header`` with each earlier name of :data:`~jaxrl.runs.metrics.RENAMED_COLUMNS` as
    its name now (kept where the header has the new name too)."""
    renamed = {old: new for old, new in RENAMED_COLUMNS.items() if new not in header}
    return [renamed.get(name, name) for name in header]


def summary_writer_class() -> type:
    """``tensorboardX.SummaryWriter``, imported without torch.

    tensorboardX imports torch when it is installed (seconds of start-up) only to accept
    torch tensors; these logs are floats, so torch is hidden during the import unless
    something imported it already.
    """
    if "torch" in sys.modules:
        from tensorboardX import SummaryWriter

        return SummaryWriter
    sys.modules["torch"] = None  # type: ignore[assignment]  # "import torch" fails fast
    try:
        from tensorboardX import SummaryWriter
    finally:
        del sys.modules["torch"]
    return SummaryWriter


def num_rows(columns: Columns) -> int:
    """``R``, the rows of ``columns`` (raising unless every column has ``R`` values)."""
    lengths = {name: len(values) for name, values in columns.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"columns of different lengths: {lengths}")
    return next(iter(lengths.values()), 0)


def _cells(values: Any, rows: int) -> list[str]:
    """A column's CSV cells: integers (and bools) as integers, floats as their ``repr``,
    empty where NaN (or where the column is missing: ``values`` None)."""
    if values is None:
        return [""] * rows
    values = np.asarray(values)
    if values.dtype.kind in "biu":
        return [str(value) for value in values.astype(np.int64).tolist()]
    if values.dtype.kind == "f":
        return ["" if value != value else repr(value) for value in values.tolist()]
    return [str(value) for value in values.tolist()]


def read_csv(path: str | Path) -> dict[str, np.ndarray]:
    """A CSV written here as ``{column: float array}`` (empty cells are NaN; a row a killed
    writer cut short is left out; a statistic's earlier name read as its name now,
    :data:`~jaxrl.runs.metrics.RENAMED_COLUMNS`).

    Raises:
      DamagedFile: the file is damaged (``jaxrl.config.files.read_csv_rows``).
    """
    header, rows = read_csv_rows(path, RUN_REMEDY)
    if not header:
        return {}
    data = np.full((len(rows), len(header)), np.nan)
    for i, row in enumerate(rows):
        for j, cell in enumerate(row):
            if cell != "":
                data[i, j] = float(cell)
    return {name: data[:, j] for j, name in enumerate(current_names(header))}


def truncate_csv(path: Path, last_period: int) -> None:
    """Keep the header and the rows of periods ``<= last_period`` (a resumed run rewrites
    what came after its checkpoint; a row a killed writer cut short goes too), the header's
    earlier names of statistics renamed (:data:`~jaxrl.runs.metrics.RENAMED_COLUMNS`).

    Raises:
      DamagedFile: the file is damaged (``jaxrl.config.files.read_csv_rows``).
    """
    if not path.exists():
        return
    header, rows = read_csv_rows(path, RUN_REMEDY, ("period",))
    period = header.index("period") if header else 0
    kept = [current_names(header)] if header else []
    kept += [row for row in rows if float(row[period]) <= last_period]
    replace_file(path, lambda tmp: _write_rows(tmp, kept))


class CsvTable:
    """An append-only CSV file: ``leading`` columns first, then every other name its rows
    carry, sorted. A name first seen after rows were written becomes a column then: the file
    is rewritten once with the wider header, the earlier rows' cells empty."""

    def __init__(self, path: Path, leading: Sequence[str]) -> None:
        self.path = Path(path)
        self.leading = tuple(leading)
        self.columns: tuple[str, ...] | None = None
        if self.path.exists() and self.path.stat().st_size > 0:
            with open(self.path, newline="") as file:  # checked when the resume trimmed it
                header = file.readline()
            if header.endswith("\n"):
                self.columns = tuple(current_names(next(csv.reader([header]))))

    def append(self, columns: Columns) -> None:
        """Append rows (:data:`Columns`); a column they lack is empty cells."""
        rows = num_rows(columns)
        if not rows:
            return
        names = set(columns)
        new_file = self.columns is None
        if self.columns is None:
            self.columns = (*self.leading, *sorted(names - set(self.leading)))
        elif not names <= set(self.columns):
            self._widen(sorted(names - set(self.columns)))
        cells = [_cells(columns.get(name), rows) for name in self.columns]
        with open(self.path, "a", newline="") as file:
            writer = csv.writer(file)
            if new_file:
                writer.writerow(self.columns)
            writer.writerows(zip(*cells, strict=True))

    def _widen(self, extra: Sequence[str]) -> None:
        """Add columns ``extra`` to the file's header, empty in the rows written so far."""
        assert self.columns is not None
        with open(self.path, newline="") as file:
            rows = list(csv.reader(file))
        self.columns = (*self.columns, *extra)
        widened = [list(self.columns), *(row + [""] * len(extra) for row in rows[1:])]
        replace_file(self.path, lambda tmp: _write_rows(tmp, widened))


def _write_rows(path: Path, rows: list[list[str]]) -> None:
    with open(path, "w", newline="") as file:
        csv.writer(file).writerows(rows)


def tensorboard_points(
    columns: Columns, env_steps: int = TENSORBOARD_ENV_STEPS
) -> list[tuple[int, int, dict[str, float]]]:
    """Update rows (:data:`Columns`: ``seed``, ``env_steps`` and statistics) as TensorBoard
    points ``(seed, env_steps, {name: mean})``: a seed's rows grouped by the window of
    ``env_steps`` env steps they end in (``(0, w]``, ``(w, 2w]``, ...), each group one point
    at its last row's env steps, every statistic the mean of its finite values (left out
    where none is), the points in the order of their first rows. Rows of one collection per
    window (on-policy runs) come out one point each."""
    if not num_rows(columns):
        return []
    seeds = np.asarray(columns["seed"], np.int64)
    steps = np.asarray(columns["env_steps"], np.int64)
    windows = -(-steps // env_steps)
    groups, first, group = np.unique(
        np.stack([seeds, windows], axis=1), axis=0, return_index=True, return_inverse=True
    )
    group = group.reshape(-1)
    last = np.full(len(groups), np.iinfo(np.int64).min)
    np.maximum.at(last, group, steps)
    means: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, values in columns.items():
        if name in _INDEX_COLUMNS:
            continue
        values = np.asarray(values, np.float64)
        finite = np.isfinite(values)
        # bincount adds each group's values in row order, as a loop over the rows would.
        total = np.bincount(group, np.where(finite, values, 0.0), len(groups))
        count = np.bincount(group, finite, len(groups))
        means[name] = (total / np.maximum(count, 1), count > 0)
    return [
        (
            int(groups[g, 0]),
            int(last[g]),
            {name: float(mean[g]) for name, (mean, some) in means.items() if some[g]},
        )
        for g in np.argsort(first, kind="stable").tolist()
    ]


class MetricsLogger:
    """Writes a run's metrics: ``updates.csv``, ``evals.csv`` and TensorBoard events under
    ``tensorboard/seed_<i>`` (scalars ``eval/return`` and ``train/<name>`` against env steps,
    the latter one point per ``TENSORBOARD_ENV_STEPS``:
    :func:`~jaxrl.runs.metrics.tensorboard_points`).

    Args:
      directory: the run directory.
      num_seeds: seeds in the run.
      resume_period: when resuming, the period of the checkpoint: rows of later periods are
        removed from the CSVs and TensorBoard discards events after ``resume_steps``; -1
        (resumed without a checkpoint) removes them all.
      resume_steps: env steps (per seed) at the checkpoint resumed from.
      tensorboard: write TensorBoard event files.
    """

    def __init__(
        self,
        directory: Path,
        num_seeds: int,
        resume_period: int | None = None,
        resume_steps: int = 0,
        tensorboard: bool = True,
    ) -> None:
        directory = Path(directory)
        run_dir = RunDir(Path(directory))
        self.updates_path = run_dir.updates_csv
        self.evals_path = run_dir.evals_csv
        if resume_period is not None:
            truncate_csv(self.updates_path, resume_period)
            truncate_csv(self.evals_path, resume_period)
        self.updates = CsvTable(self.updates_path, UPDATE_COLUMNS)
        self.evals = CsvTable(self.evals_path, EVAL_COLUMNS)
        self.writers: list[Any] = []
        if tensorboard:
            writer_class = summary_writer_class()
            purge = None
            if resume_period is not None:  # keep the events up to the checkpoint (none: -1)
                purge = resume_steps + 1 if resume_period >= 0 else 0
            self.writers = [
                writer_class(str(run_dir.tensorboard / f"seed_{seed}"), purge_step=purge)
                for seed in range(num_seeds)
            ]

    def log_updates(self, columns: Columns) -> None:
        """Rows with ``seed``, ``period``, ``update``, ``env_steps``, ``train_return`` and
        the agent's statistics: every row to ``updates.csv``, their windows' means to
        TensorBoard (:func:`~jaxrl.runs.metrics.tensorboard_points`)."""
        self.updates.append(columns)
        if not self.writers:
            return
        for seed, step, means in tensorboard_points(columns):
            for name, value in means.items():
                self.writers[seed].add_scalar(f"train/{name}", value, step)

    def log_evals(self, columns: Columns) -> None:
        """Rows with ``seed``, ``period``, ``env_steps``, ``eval_return``, ``wall_time``."""
        self.evals.append(columns)
        if self.writers:
            rows = zip(columns["seed"], columns["eval_return"], columns["env_steps"], strict=True)
            for seed, value, step in rows:
                self.writers[int(seed)].add_scalar("eval/return", float(value), int(step))
        self.flush()

    def flush(self) -> None:
        """Flush the TensorBoard writers."""
        for writer in self.writers:
            writer.flush()

    def close(self) -> None:
        """Flush and close the TensorBoard writers."""
        for writer in self.writers:
            writer.close()
        self.writers = []


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


def evaluation_means(evals_csv: str | Path) -> dict[int, tuple[int, float]]:
    """Each evaluation during training in an ``evals.csv``, by the env steps of the policy it
    evaluated: ``{env_steps: (period, mean return across seeds)}`` (NaN where no seed's
    return is finite; empty without the file)."""
    if not Path(evals_csv).is_file():
        return {}
    table = read_csv(evals_csv)
    if not table:
        return {}
    steps, periods = table["env_steps"].astype(np.int64), table["period"].astype(np.int64)
    returns = table["eval_return"].astype(np.float64)
    means = {}
    for step in np.unique(steps).tolist():
        at = steps == step
        finite = returns[at][np.isfinite(returns[at])]
        means[step] = (int(periods[at][0]), float(np.mean(finite)) if finite.size else np.nan)
    return means


def best_evaluation(evals_csv: str | Path) -> tuple[int, float, int] | None:
    """``(period, mean return, env steps)`` of the run's best evaluation during training (the
    best mean across seeds in ``evals.csv``, the initial policy's included; the earliest of
    equals), or None without a finite one."""
    means = evaluation_means(evals_csv)
    finite = {step: pm for step, pm in means.items() if np.isfinite(pm[1])}
    if not finite:
        return None
    step = max(finite, key=lambda s: (finite[s][1], -s))
    period, mean = finite[step]
    return period, mean, step
