"""A cell of the MuJoCo table (``mujoco_table.py``): its settings, its rows in the results
file, and training a group of its seeds, resumable, within the wall-time budget.

A cell is one algorithm on one task with the ``mujoco`` preset's resolved settings
(:class:`Cell`; ``settings_id`` hashes them); its rows are the JSON lines of the results
file, one per finished seed (:func:`read_rows`, :func:`append_rows`). A group of its seeds
trains in a run directory beside the results file and checkpoints as it goes
(:func:`train_group`); :func:`estimate_seconds` times a group by its own or its cell's
earlier rates.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import itertools
import json
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from common import loadavg

from jaxrl.config.files import DamagedFile, read_jsonl
from jaxrl.runs.metrics import learning_curve, read_csv
from jaxrl.runs.published import published_tasks

try:
    import fcntl
except ImportError:  # not on Windows: appends there are not locked
    fcntl = None

RESULTS_FILE = "mujoco_table.jsonl"
ON_POLICY = ("trpo", "npg")
CELL_SETS: dict[str, tuple[tuple[str, str], ...]] = {
    "trpo-npg": tuple((a, f"{t}-v5") for t in published_tasks() for a in ON_POLICY),
    "ddpg": tuple(("ddpg", f"{t}-v5") for t in published_tasks()),
}
CELL_SETS["all"] = CELL_SETS["trpo-npg"] + CELL_SETS["ddpg"]
DEFAULT_SEEDS = {"trpo": 10, "npg": 10, "ddpg": 3}
# Seeds trained together in one process: more is faster per seed, fewer loses less to a kill.
DEFAULT_GROUP = {"trpo": 5, "npg": 5, "ddpg": 3}
# Tianshou's published table reports 1M-step runs; a cell counts from this many env steps.
FULL_BUDGET_STEPS = 990_000


# ------------------------------------------------------------------------------ the cell
@dataclass(frozen=True)
class Cell:
    """One cell of the table: ``algo`` on ``env`` with the resolved run ``config``."""

    algo: str
    env: str
    config: Any  # jaxrl.config.run_config.RunConfig (seed and num_seeds are per group)
    # The linear learning-rate schedule sized for this many updates instead of the run's
    # (--lr-schedule-updates); None: the preset's.
    schedule_updates: int | None = None

    def make_agent(self) -> Any:
        """The cell's algorithm object: the preset's, with the schedule resized if asked."""
        agent = self.config.make_agent()
        if self.schedule_updates is None:
            return agent
        from jaxrl.algorithms._common import linear_schedule

        return dataclasses.replace(agent, lr_schedule=linear_schedule(self.schedule_updates))

    @property
    def settings(self) -> dict[str, Any]:
        """What a row must share with the others of its cell: the preset, every resolved
        hyperparameter, the run settings that change learning (not seeds, backends or
        checkpointing) and the counts they make (env steps, evaluation points, agent
        updates: the schedule's length)."""
        data = self.config.to_dict()
        run = {
            name: data["run"][name]
            for name in (
                "num_envs",
                "num_steps",
                "total_steps",
                "eval_every",
                "eval_episodes",
                "normalize_obs",
            )
        }
        settings = {
            "preset": data["preset"],
            "run": run,
            "hyperparameters": data["hyperparameters"],
            "counts": data["counts"],  # the arithmetic: env steps, evaluations, updates
        }
        if self.schedule_updates is not None:
            settings["lr_schedule_updates"] = self.schedule_updates
        return settings

    @property
    def settings_id(self) -> str:
        blob = json.dumps(self.settings, sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:12]


def make_cell(algo: str, env: str, total_steps: int, args: argparse.Namespace) -> Cell:
    from jaxrl.config.run_config import RunConfig

    run: dict[str, Any] = {"total_steps": total_steps, "eval_episodes": args.eval_episodes}
    if args.eval_every:
        run["eval_every"] = args.eval_every
    hyper = dict(args.hyperparameters.get(algo, {}))
    config = RunConfig.from_preset(
        algo, env, "mujoco", hyperparameters=hyper, env_backend=args.env_backend, **run
    )
    updates = args.lr_schedule_updates
    if updates is not None and updates < 1:
        raise SystemExit(f"--lr-schedule-updates must be a positive integer, got {updates}")
    if updates is not None and config.hyperparameters.get("lr_schedule") != "linear":
        raise SystemExit(f"--lr-schedule-updates: {algo}'s preset has no linear lr_schedule")
    return Cell(algo, env, config, updates)


def check_cell_rows(cell: Cell, rows: Sequence[dict[str, Any]], results: Path) -> set[int]:
    """The seeds of ``cell`` already in ``rows``; a row of the same algorithm and task with
    another preset version or budget is an error (one cell, one setting)."""
    seeds = set()
    for row in rows:
        if (row["algo"], row["env"]) != (cell.algo, cell.env):
            continue
        ours = (cell.settings_id, cell.config.total_steps)
        theirs = (row.get("settings_id"), row.get("total_steps"))
        if theirs != ours:
            raise SystemExit(
                f"{results} has {cell.algo} on {cell.env} rows with settings_id "
                f"{theirs[0]} and total_steps {theirs[1]}; this run's are {ours[0]} and "
                f"{ours[1]}: refusing to mix them into one cell. Name another --results "
                "file, or remove those rows."
            )
        seeds.add(int(row["seed"]))
    return seeds


# ------------------------------------------------------------------------------ results file
def read_rows(path: Path) -> list[dict[str, Any]]:
    """The results file's rows; a line cut short by a killed writer is left out, with a
    warning. Any other line that is not a row (not JSON, or JSON without ``algo``, ``env``
    and ``seed``) stops the table with one line naming the file and the line."""
    if not path.exists():
        return []
    cut: list[int] = []
    remedy = "restore it from a copy, or remove that line (its seeds train again)"
    try:
        rows = read_jsonl(path, remedy, ("algo", "env", "seed"), cut_short=cut)
    except DamagedFile as error:
        raise SystemExit(f"error: {error}") from None
    for number in cut:
        print(f"warning: {path}:{number} is not a whole JSON line (left out)")
    return rows


def append_rows(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """Append ``rows`` as whole lines in one write, flushed to disk, under an exclusive lock of
    the file where the system has one (``fcntl``)."""
    text = "".join(json.dumps(row) + "\n" for row in rows)
    with path.open("a") as f:
        if fcntl is not None:  # the groups of --jobs append from several processes
            fcntl.flock(f, fcntl.LOCK_EX)
        if f.tell() and not path.read_text().endswith("\n"):
            text = "\n" + text  # a line cut short by a kill stays on its own line
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


# ------------------------------------------------------------------------------ training
class Deadline(Exception):
    """The wall-time budget ran out while a group was training."""


# A group checkpoints about this often (env steps per seed), so that a killed or stopped group
# resumes from there (DDPG's groups take hours on a small CPU).
CHECKPOINT_STEPS = 50_000


def group_dir(results: Path, cell: Cell, seeds: Sequence[int]) -> Path:
    """The run directory a group trains in, beside the results file (``<stem>_runs/``),
    named by its cell, seeds and settings; removed once the group's rows are recorded."""
    name = f"{cell.algo}-{cell.env}-seeds-{seeds[0]}-{seeds[-1]}-{cell.settings_id}"
    return results.parent / f"{results.stem}_runs" / name


def group_progress(path: Path) -> int:
    """Env steps per seed that a group's newest checkpoint holds (0: none)."""
    from jaxrl.runs.checkpoints import CheckpointStore

    if not (path / "checkpoints").is_dir():
        return 0
    with CheckpointStore(path / "checkpoints") as store:
        step = store.latest_step()
        return 0 if step is None else int(store.metadata(step)["env_steps"])


def train_group(
    cell: Cell,
    seeds: list[int],
    deadline: float,
    provenance: dict[str, Any],
    path: Path,
    stop_after_periods: int | None = None,
    preempted: Callable[[], bool] | None = None,
) -> list[dict[str, Any]] | None:
    """Train ``seeds`` of ``cell`` together (one vmapped host-driver run, ``jaxrl train``'s
    runner) in the run directory ``path``, checkpointing about every ``CHECKPOINT_STEPS`` env
    steps and resuming from its newest checkpoint if it has one (on fresh environments, as
    ``jaxrl train --resume``); one row per seed.

    A group with a resized learning-rate schedule (``--lr-schedule-updates``) runs in one call
    without checkpoints: the runner builds the algorithm from its configuration alone.

    Returns:
      The rows, or None when ``stop_after_periods`` or ``preempted`` (SIGTERM) ended the call
      before the group finished (checkpointed, resumable).

    Raises:
      Deadline: the budget ran out first (the group keeps a checkpoint of where it stopped).
    """
    if cell.schedule_updates is not None:
        return _train_in_one_call(cell, seeds, deadline, provenance)
    from jaxrl.envs.host import resolve_env_backend
    from jaxrl.runs.run_dir import RunDir
    from jaxrl.runs.runner import train_run

    every = max(1, round(CHECKPOINT_STEPS / cell.config.eval_every))
    config = dataclasses.replace(
        cell.config, seed=seeds[0], num_seeds=len(seeds), checkpoint_every=every
    )
    resumed_at = group_progress(path)
    if resumed_at:
        print(f"  resuming {cell.algo} {cell.env} seeds {seeds} from {resumed_at:,} env steps")
    elif path.exists():
        shutil.rmtree(path)  # a group killed before its first checkpoint starts over
    run_dir = RunDir(path) if resumed_at else RunDir.create(path)
    periods = itertools.count(1)

    def stop() -> bool:  # asked after every period but the last
        if time.time() >= deadline or (preempted is not None and preempted()):
            return True
        return stop_after_periods is not None and next(periods) >= stop_after_periods

    result = train_run(
        config,
        run_dir,
        resume=bool(resumed_at),
        stop=stop,
        on_setup=lambda message: print(f"  {message}", flush=True),
    )
    if not result.finished:
        if time.time() >= deadline:
            raise Deadline
        return None
    steps, returns, _ = learning_curve(run_dir.evals_csv)
    periodic = steps > 0  # the runner also evaluates the initial policy: not a table point
    wall = read_csv(run_dir.evals_csv)["wall_time"]
    seconds = float(np.max(np.asarray(wall, float)))  # over every call of the group
    backend = resolve_env_backend(cell.env, config.env_backend)
    rows = _rows(cell, seeds, steps[periodic], returns[periodic].T, seconds, backend, provenance)
    for row in rows:
        row["resumed_at_env_steps"] = resumed_at or None
    return rows


def _train_in_one_call(
    cell: Cell, seeds: list[int], deadline: float, provenance: dict[str, Any]
) -> list[dict[str, Any]]:
    """A group trained by the host driver in one call (no checkpoints)."""
    from jaxrl.envs.host import resolve_env_backend
    from jaxrl.training.gymnasium_driver import train_gymnasium

    config = cell.config
    backend = resolve_env_backend(cell.env, config.env_backend)
    start = time.perf_counter()
    stopped = []

    def progress(info: dict) -> None:
        returns = " ".join(f"{r:8.1f}" for r in info["eval_returns"])
        print(
            f"  {cell.algo} {cell.env} seeds {seeds[0]}-{seeds[-1]}: "
            f"{info['env_steps']:>9,d} steps {info['seconds']:7.0f}s  returns {returns}",
            flush=True,
        )

    def stop(_: Any) -> bool:
        if time.time() >= deadline:
            stopped.append(True)
        return bool(stopped)

    _, metrics = train_gymnasium(
        cell.make_agent(),
        cell.env,
        config.driver_settings,  # the run's shape, as `jaxrl train` gives it to the driver
        seed=seeds[0],
        num_seeds=len(seeds),
        env_backend=backend,
        progress=progress,
        stop=stop,
    )
    if stopped:
        raise Deadline
    seconds = time.perf_counter() - start
    steps = np.asarray(metrics["eval/env_steps"][0]).astype(int)
    returns = np.asarray(metrics["eval/return"], float)  # [seeds, evaluations]
    return _rows(cell, seeds, steps, returns, seconds, backend, provenance)


def _rows(
    cell: Cell,
    seeds: Sequence[int],
    steps: np.ndarray,
    returns: np.ndarray,
    seconds: float,
    backend: str,
    provenance: dict[str, Any],
) -> list[dict[str, Any]]:
    """One results row per seed: ``steps [P]`` and ``returns [S, P]`` (the evaluations)."""
    steps = np.asarray(steps).astype(int)
    rows = []
    for index, seed in enumerate(seeds):
        curve = np.asarray(returns[index], float)
        rows.append(
            {
                "algo": cell.algo,
                "env": cell.env,
                "seed": seed,
                "total_steps": cell.config.total_steps,
                "env_steps": int(steps[-1]),
                "eval_env_steps": steps.tolist(),
                "eval_return": curve.tolist(),
                "final_return": float(curve[-1]),
                "best_return": float(curve.max()),
                "eval_episodes": cell.config.eval_episodes,
                "seconds": seconds,
                "seeds_in_process": len(seeds),
                "env_steps_per_second": len(seeds) * int(steps[-1]) / seconds,
                "env_backend": backend,
                "preset": cell.config.preset,
                "settings_id": cell.settings_id,
                "settings": cell.settings,
                **provenance,
                "loadavg_end": loadavg(),
                "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            }
        )
    return rows


def rows_of(cell: Cell, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of ``cell`` (its algorithm, task and settings)."""
    key = (cell.algo, cell.env, cell.settings_id)
    return [r for r in rows if (r["algo"], r["env"], r.get("settings_id")) == key]


RATE_WINDOW = 10  # evaluation periods over which a stopped group's own rate is measured


def group_rate(path: Path) -> tuple[float, int] | None:
    """A stopped group's env steps per second per seed over its last :data:`RATE_WINDOW`
    evaluation periods on this machine (its ``evals.csv``: steps and the wall time summed
    over its calls), and the env steps that spans; None before it has two periods."""
    from jaxrl.runs.run_dir import RunDir

    evals = RunDir(path).evals_csv
    if not evals.is_file():
        return None
    table = read_csv(evals)
    if not table:
        return None
    points = sorted(set(zip(table["env_steps"].tolist(), table["wall_time"].tolist(), strict=True)))
    points = [p for p in points if p[0] > 0][-(RATE_WINDOW + 1) :]
    if len(points) < 2 or points[-1][1] <= points[0][1]:
        return None
    (steps0, wall0), (steps1, wall1) = points[0], points[-1]
    return (steps1 - steps0) / (wall1 - wall0), int(steps1 - steps0)


def estimate_seconds(
    cell: Cell, seeds: int, rows: Sequence[dict[str, Any]], path: Path | None = None
) -> tuple[float, str] | None:
    """A group's wall time for its whole budget and what it comes from, the first of: the
    group's own rate so far (``path``, its run directory, when it stopped and resumes:
    :func:`group_rate`); the cell's earlier groups; the same algorithm's groups on the other
    tasks at the same budget (a rougher guess: the simulators differ); else None. Among
    earlier groups, those of the same size are preferred: a group's rate in all grows with
    its seeds, but not in proportion (on a 2-core CPU: 1 DDPG seed 176-183 env steps/s, 3 seeds
    vmapped 260-300 in all; docs/benchmarks/scaling.md)."""
    own = group_rate(path) if path is not None else None
    if own is not None:
        return cell.config.total_steps / own[0], f"at its own rate over {own[1]:,} env steps"
    same = rows_of(cell, rows)
    basis = "at the rate measured so far"
    if not same:
        same = [
            r
            for r in rows
            if r["algo"] == cell.algo and r.get("total_steps") == cell.config.total_steps
        ]
        basis = f"at {cell.algo}'s rate on its other tasks"
    if not same:
        return None
    sized = [r for r in same if r.get("seeds_in_process") == seeds]
    if sized:
        same, basis = sized, f"{basis}, groups of {seeds}"
    rate = np.median([r["env_steps_per_second"] for r in same])
    return seeds * cell.config.total_steps / rate, basis


def remove_recorded_groups(results: Path, rows: Sequence[dict[str, Any]]) -> None:
    """Remove the run directories of groups whose every seed has its row: a group's rows are
    written before its directory is removed, and a run killed between the two leaves it."""
    runs = results.parent / f"{results.stem}_runs"
    recorded = {(r["algo"], r["env"], r.get("settings_id"), r["seed"]) for r in rows}
    for path in sorted(runs.iterdir()) if runs.is_dir() else []:
        head, _, tail = path.name.partition("-seeds-")
        algo, _, env = head.partition("-")
        first, last, settings_id = [*tail.split("-", 2), "", "", ""][:3]
        if not (first.isdigit() and last.isdigit()):
            continue
        seeds = range(int(first), int(last) + 1)
        if all((algo, env, settings_id, seed) in recorded for seed in seeds):
            shutil.rmtree(path, ignore_errors=True)


def stopped_groups(results: Path) -> list[str]:
    """One line per group with a checkpoint beside ``results``: where the next run resumes."""
    runs = results.parent / f"{results.stem}_runs"
    paths = sorted(runs.iterdir()) if runs.is_dir() else []
    progress = {path.name: group_progress(path) for path in paths}
    return [f"{name}: resumes from {n:,} env steps" for name, n in progress.items() if n]
