"""Experiment tracking: where a run's metrics go besides its CSVs (``--logger``).

``--logger tensorboard`` (the default) writes TensorBoard event files into the run directory
(:class:`jaxrl.runs.metrics.MetricsLogger`); ``--logger wandb`` (the ``wandb`` extra:
``pip install 'jaxrl[wandb]'``) logs the run to Weights & Biases; ``--logger tensorboard,wandb``
does both. What a wandb run holds (:class:`WandbTracker`):

- its config: the resolved configuration (``config.json``'s content);
- its history, one row per point, each with ``env_steps`` (the x-axis of every other key):
  ``eval/return`` (the mean across seeds) and ``eval/return_seed_<i>`` at every evaluation
  (the rows of ``evals.csv``), ``train/<name>`` (the mean across seeds) at the update
  statistics' TensorBoard points (one per ``TENSORBOARD_ENV_STEPS`` env steps of a seed:
  :func:`jaxrl.runs.metrics.tensorboard_points`), and ``learning_curve`` (the figure) when a
  training call ends;
- its summary: the final report, ``final_eval/<mode>_mean`` and ``final_eval/<mode>_seed_<i>``
  (``final_eval.json``: :class:`jaxrl.runs.report.FinalEvaluation`) and
  ``final_eval/episodes``, ``final_eval/env_steps``.

The wandb run's id is kept in ``RUN_DIR/wandb_id``: a resumed run (``--resume RUN_DIR``)
continues the same wandb run (``resume="allow"``), with whatever ``--logger`` it is resumed
with (the trackers are not part of what a run computes, so not in ``config.json``). The
project is ``$WANDB_PROJECT`` or ``jaxrl``, the run's name its directory's name; the runs of
a sweep or a tuning study share its directory's name as their wandb ``group``. wandb's files
go to ``$WANDB_DIR`` or the run directory; ``WANDB_MODE=offline`` logs without an account
(``wandb sync`` uploads later).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import os
import secrets
import string
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jaxrl.config.files import RUN_REMEDY, read_json, write_text
from jaxrl.runs.metrics import Columns, tensorboard_points
from jaxrl.runs.report import FinalEvaluation
from jaxrl.runs.run_dir import RunDir

LOGGERS = ("tensorboard", "wandb")
"""The trackers ``--logger`` names."""
DEFAULT_LOGGERS = ("tensorboard",)
WANDB_ID_FILE = "wandb_id"
"""The file of a run directory that keeps its wandb run's id."""
MISSING_WANDB = "wandb needs the wandb package: pip install 'jaxrl[wandb]'"
"""What :meth:`Tracking.check` says without wandb (the command line puts ``--logger`` first)."""


class TrackingError(ValueError):
    """An unknown logger, or a logger whose package is not installed."""


def parse_loggers(text: str) -> tuple[str, ...]:
    """``--logger``'s comma-separated names as a tuple (repeats dropped, order kept).

    Raises:
      TrackingError: an empty list or an unknown name (the message names ``--logger`` and
        the choices).
    """
    names = tuple(dict.fromkeys(name.strip() for name in text.split(",") if name.strip()))
    unknown = [name for name in names if name not in LOGGERS]
    if unknown or not names:
        what = f"unknown logger {unknown[0]!r}" if unknown else "no logger named"
        raise TrackingError(
            f"--logger {text!r}: {what}; expected a comma-separated list of {', '.join(LOGGERS)}"
        )
    return names


@dataclasses.dataclass(frozen=True)
class Tracking:
    """Where a training call logs besides the CSVs.

    Attributes:
      loggers: names from ``LOGGERS``.
      group: the wandb group of the run (a sweep's or tuning study's directory name).
    """

    loggers: tuple[str, ...] = DEFAULT_LOGGERS
    group: str | None = None

    @property
    def tensorboard(self) -> bool:
        return "tensorboard" in self.loggers

    @property
    def wandb(self) -> bool:
        return "wandb" in self.loggers

    def check(self) -> Tracking:
        """This tracking, once its loggers' packages are found.

        Raises:
          TrackingError: ``wandb`` without the wandb package (``MISSING_WANDB``).
        """
        if self.wandb and importlib.util.find_spec("wandb") is None:
            raise TrackingError(MISSING_WANDB)
        return self

    def grouped(self, group: str) -> Tracking:
        """The same loggers, the runs grouped as ``group``."""
        return dataclasses.replace(self, group=group)


DEFAULT_TRACKING = Tracking()
"""TensorBoard alone (``--logger tensorboard``, the default)."""


def wandb_history_rows(kind: str, columns: Columns) -> list[dict[str, float | int]]:
    """The wandb history rows of metrics rows, in the order of their env steps.

    Args:
      kind: ``"evals"`` (rows of ``evals.csv``: ``eval/return`` across seeds and
        ``eval/return_seed_<i>`` per seed) or ``"updates"`` (rows of ``updates.csv``:
        ``train/<name>``, the mean across seeds of each TensorBoard point).
      columns: the metrics rows (:data:`jaxrl.runs.metrics.Columns`: ``seed``,
        ``env_steps`` and values).

    Returns:
      One dict per env step, with ``env_steps`` and the keys above.
    """
    by_step: dict[int, dict[str, list[float]]] = {}
    if kind == "evals":
        rows = zip(columns["seed"], columns["env_steps"], columns["eval_return"], strict=True)
        for seed, step, value in rows:
            values = by_step.setdefault(int(step), {})
            values.setdefault("eval/return", []).append(float(value))
            values[f"eval/return_seed_{int(seed)}"] = [float(value)]
    elif kind == "updates":
        for _, step, means in tensorboard_points(columns):
            values = by_step.setdefault(step, {})
            for name, value in means.items():
                values.setdefault(f"train/{name}", []).append(value)
    else:
        raise ValueError(f"kind must be 'evals' or 'updates', not {kind!r}")
    return [
        {"env_steps": step, **{key: float(np.mean(v)) for key, v in values.items()}}
        for step, values in sorted(by_step.items())
    ]


def final_summary(final: FinalEvaluation) -> dict[str, float | int]:
    """The final report as flat wandb summary keys (see the module docstring)."""
    summary: dict[str, float | int] = {
        "final_eval/episodes": final.episodes,
        "final_eval/env_steps": final.env_steps,
    }
    modes = {"deterministic": final.deterministic, "stochastic": final.stochastic}
    for mode, returns in modes.items():
        if returns is None:
            continue
        returns = np.asarray(returns, np.float64)
        summary[f"final_eval/{mode}_mean"] = float(np.mean(returns))
        for seed, value in enumerate(returns):
            summary[f"final_eval/{mode}_seed_{seed}"] = float(value)
    return summary


def wandb_run_id(run_dir: RunDir) -> str:
    """The id of ``run_dir``'s wandb run: the one kept in ``RUN_DIR/wandb_id``, else a new one
    (kept there)."""
    path = run_dir.path / WANDB_ID_FILE
    if path.is_file() and path.read_text().strip():
        return path.read_text().strip()
    alphabet = string.ascii_lowercase + string.digits  # wandb's own ids: 8 of these
    run_id = "".join(secrets.choice(alphabet) for _ in range(8))
    write_text(path, run_id + "\n")
    return run_id


class NoTracker:
    """The tracker of a run logged to no experiment tracker (or of a process that logs
    nothing: not process 0 of a job)."""

    def log_updates(self, columns: Columns) -> None:
        del columns

    def log_evals(self, columns: Columns) -> None:
        del columns

    def log_final(self, final: FinalEvaluation) -> None:
        del final

    def close(self, figure: Path | None = None) -> None:
        del figure


class WandbTracker(NoTracker):
    """A run's wandb run (see the module docstring for what it holds).

    Args:
      run_dir: the run directory (``config.json`` written; its ``wandb_id`` is read or
        written).
      group: the wandb group (a sweep's or tuning study's directory name), or None.

    Raises:
      TrackingError: wandb could not start the run (not logged in, ...).
    """

    def __init__(self, run_dir: RunDir, group: str | None = None) -> None:
        import wandb

        config = read_json(run_dir.config, RUN_REMEDY)
        self.env_steps = 0
        try:
            self.run = wandb.init(
                project=os.environ.get("WANDB_PROJECT") or "jaxrl",
                id=wandb_run_id(run_dir),
                resume="allow",
                name=run_dir.path.name,
                group=group,
                dir=os.environ.get("WANDB_DIR") or str(run_dir.path),
                reinit="create_new",  # a sweep group's runs are open at once
            )
        except wandb.errors.Error as error:  # not logged in, ...: what wandb says, one line
            message = " ".join(str(error).split())
            raise TrackingError(
                f"wandb: {message.rstrip('.')} (or log offline: WANDB_MODE=offline)"
            ) from None
        self.run.config.update(config, allow_val_change=True)  # a resume may change some
        self.run.define_metric("env_steps")
        self.run.define_metric("*", step_metric="env_steps")

    def _log(self, rows: Sequence[dict[str, Any]]) -> None:
        for row in rows:
            self.env_steps = max(self.env_steps, int(row["env_steps"]))
            self.run.log(row)

    def log_updates(self, columns: Columns) -> None:
        """The update statistics' points (:func:`wandb_history_rows`, ``"updates"``)."""
        self._log(wandb_history_rows("updates", columns))

    def log_evals(self, columns: Columns) -> None:
        """Evaluations (:func:`wandb_history_rows`, ``"evals"``)."""
        self._log(wandb_history_rows("evals", columns))

    def log_final(self, final: FinalEvaluation) -> None:
        """The final report, into the run's summary (:func:`final_summary`)."""
        self.run.summary.update({k: v for k, v in final_summary(final).items() if math.isfinite(v)})

    def close(self, figure: Path | None = None) -> None:
        """Log the learning-curve ``figure`` (if it exists) and finish the wandb run."""
        import wandb

        if figure is not None and Path(figure).is_file():
            image = wandb.Image(str(figure))
            self.run.log({"env_steps": self.env_steps, "learning_curve": image})
        self.run.finish()


def open_tracker(tracking: Tracking, run_dir: RunDir) -> NoTracker:
    """The experiment tracker ``tracking`` asks for (besides TensorBoard, which
    :class:`jaxrl.runs.metrics.MetricsLogger` writes) for the run in ``run_dir``."""
    if tracking.wandb:
        return WandbTracker(run_dir, tracking.group)
    return NoTracker()


__all__ = [
    "DEFAULT_LOGGERS",
    "DEFAULT_TRACKING",
    "LOGGERS",
    "MISSING_WANDB",
    "NoTracker",
    "Tracking",
    "TrackingError",
    "WANDB_ID_FILE",
    "WandbTracker",
    "final_summary",
    "open_tracker",
    "parse_loggers",
    "wandb_history_rows",
    "wandb_run_id",
]
