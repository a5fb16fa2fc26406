"""User-facing input and output: run directories, their configuration, metrics (CSV and
TensorBoard), learning-curve plots, orbax checkpoints and live progress. The ``jaxrl``
command (:mod:`jaxrl.cli`) is built on it; research code can use it directly::

    from jaxrl.io import RunConfig, RunDir, load_run, sweep, train_run

    config = RunConfig.load("runs/trpo-.../config.json")
    loaded = load_run("runs/trpo-...")          # agent, state (seed axis first), metadata
    study = sweep(config, {"max_kl": [0.005, 0.01]}, "sweeps/max-kl")  # jaxrl.io.studies
"""

from jaxrl.io.checkpoints import CheckpointError, CheckpointStore
from jaxrl.io.config import ALGORITHMS, RunConfig, hyperparameters
from jaxrl.io.metrics import MetricsLogger, read_csv
from jaxrl.io.plots import plot_runs
from jaxrl.io.run_dir import RunDir, RunDirError, default_run_path
from jaxrl.io.runner import (
    LoadedRun,
    TrainResult,
    check_config,
    evaluate_run,
    load_run,
    resolve_backend,
    train_run,
)
from jaxrl.io.studies import SweepError, SweepResult, parse_grid, sweep

__all__ = [
    "ALGORITHMS",
    "CheckpointError",
    "CheckpointStore",
    "LoadedRun",
    "MetricsLogger",
    "RunConfig",
    "RunDir",
    "RunDirError",
    "SweepError",
    "SweepResult",
    "TrainResult",
    "check_config",
    "default_run_path",
    "evaluate_run",
    "hyperparameters",
    "load_run",
    "parse_grid",
    "plot_runs",
    "read_csv",
    "resolve_backend",
    "sweep",
    "train_run",
]
