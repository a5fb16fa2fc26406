"""Tianshou's MuJoCo benchmark table, resumable: TRPO/NPG x 7 tasks x 10 seeds, DDPG x 7 tasks.

Runs a named set of cells (algorithm x task x seeds x budget) with jaxrl's ``mujoco`` preset
(Tianshou's ``examples/mujoco/mujoco_{trpo,npg,ddpg}.py`` settings) on the host driver, many
seeds per process (vmapped), on EnvPool when it is installed (``pip install -e ".[envpool]"``):

- one JSON line per finished seed is appended to the results file
  (``benchmarks/results/mujoco_table.jsonl``): ``algo``, ``env``, ``seed``, ``total_steps``
  (the budget asked for), ``env_steps`` (run), ``eval_env_steps`` and ``eval_return`` (the mean
  over ``eval_episodes`` test episodes at each evaluation), ``final_return``, ``best_return``,
  ``seconds``, ``commit``, ``machine``, ``env_backend``, ``preset`` and ``settings_id`` (a hash
  of every resolved hyperparameter and run setting, the preset's version);
- seeds already in the file are skipped, so an interrupted table continues where it stopped;
  a group trains in a run directory beside the results file (``<stem>_runs/``, ``jaxrl
  train``'s runner) and checkpoints about every ``CHECKPOINT_STEPS`` env steps, so a killed or
  stopped group resumes from its newest checkpoint (on fresh environments, as ``jaxrl train
  --resume``; its rows say where: ``resumed_at_env_steps``), and a group's rows are written
  whole when it ends; rows of another preset version or budget in a cell stop the run with an
  error instead of being mixed in;
- ``--budget-minutes`` bounds the wall time: a group that will not fit in what is left (less
  what its checkpoint has done), timed by its own recent rate if it stopped and resumes, else
  by its cell's earlier groups (those of its size first) or, for a cell without any, the same
  algorithm's groups on other tasks, waits until the groups that fit have run, then
  starts if budget is left; a group still training at the deadline is checkpointed and
  stopped, and the run ends by saying what remains;
- ``--jobs N`` trains up to N groups at once, each in a process of its own pinned to its share
  of the CPUs (``machine.process_cpus`` in its rows); with fewer groups to train, the CPUs
  are dealt into as many shares, and a group left alone trains in the table's process.

``--table`` writes ``mujoco_table.md`` and ``mujoco_table.png`` from the results file: per cell
Tianshou's statistic (the maximum over evaluations of the mean across seeds, +- the std across
seeds at that evaluation), the final evaluation, the seed count, the wall time and the machine,
beside Tianshou's published value (:mod:`jaxrl.runs.published`).

    nice -n 19 python benchmarks/mujoco_table.py --cells all --budget-minutes 150
    python benchmarks/mujoco_table.py --table
    python benchmarks/mujoco_table.py --quick            # CI smoke run

``--lr-schedule-updates N`` sizes the preset's linear learning-rate schedule for ``N`` updates
instead of the run's (Tianshou's example scripts run 3M steps, 3,000 updates, and its table
reads their first 1M, where 2/3 of the rate is left): a setting of its own (its rows'
``settings_id`` differ), for a results file of its own:

    python benchmarks/mujoco_table.py --algos npg --envs Reacher-v5 --num-seeds 5 \
        --lr-schedule-updates 3000 --results benchmarks/results/mujoco_schedule_3m.jsonl
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import itertools
import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from common import (
    BENCH_DIR,
    base_parser,
    command_line,
    loadavg,
    machine_info,
    markdown_table,
    mujoco_available,
    output_dir,
    print_machine,
    pyplot,
    save_figure,
)

from jaxrl.config.files import DamagedFile, read_jsonl
from jaxrl.runs.metrics import learning_curve, read_csv
from jaxrl.runs.published import SOURCE, TASK_VERSIONS, published_tasks, task_of, tianshou_mujoco
from jaxrl.studies.processes import check_jobs, usable_cpus

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


# ------------------------------------------------------------------------------ the plan
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


@dataclass
class Plan:
    """The groups still to train, and what was skipped."""

    groups: list[tuple[Cell, list[int]]] = field(default_factory=list)
    done: dict[tuple[str, str], int] = field(default_factory=dict)


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


def consecutive_groups(seeds: Iterable[int], size: int) -> list[list[int]]:
    """``seeds`` (sorted) cut into runs of consecutive seeds of at most ``size`` each: the
    host driver trains seeds ``s, s + 1, ...`` together."""
    groups: list[list[int]] = []
    for seed in sorted(seeds):
        if groups and seed == groups[-1][-1] + 1 and len(groups[-1]) < size:
            groups[-1].append(seed)
        else:
            groups.append([seed])
    return groups


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


def make_plan(
    cells: Sequence[Cell], seeds: dict[str, list[int]], rows: list[dict], args: Any
) -> Plan:
    plan = Plan()
    for cell in cells:
        done = check_cell_rows(cell, rows, args.results)
        plan.done[(cell.algo, cell.env)] = len(done & set(seeds[cell.algo]))
        missing = [s for s in seeds[cell.algo] if s not in done]
        size = args.seeds_per_process or DEFAULT_GROUP[cell.algo]
        plan.groups += [(cell, group) for group in consecutive_groups(missing, size)]
    return plan


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


def git_commit() -> str:
    """The checkout's commit, ``+dirty`` when a tracked file of ``jaxrl/`` or ``benchmarks/``
    (but its ``results/``) differs from it."""

    def git(*argv: str) -> str:
        return subprocess.run(
            ["git", *argv], cwd=BENCH_DIR, capture_output=True, text=True, check=False
        ).stdout.strip()

    commit = git("rev-parse", "HEAD") or "unknown"
    # The code that trains (paths from the repository's top; the results it writes aside).
    code = (":(top)jaxrl", ":(top)benchmarks", ":(top,exclude)benchmarks/results")
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", *code)
    return commit + ("+dirty" if dirty else "")


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


def run_plan(
    plan: Plan,
    args: Any,
    rows: list[dict[str, Any]],
    preempted: Callable[[], bool] | None = None,
) -> None:
    """Train the plan's groups in :func:`group_order` within the budget: one after another
    in this process, or with ``--jobs N`` up to N at once (:func:`run_in_processes`). Once
    ``preempted`` (SIGTERM), no group starts and those under way checkpoint their period."""
    deadline = time.time() + 60 * args.budget_minutes if args.budget_minutes else math.inf
    info = machine_info()
    print_machine(info)
    machine = {k: info[k] for k in ("cpu", "cores", "memory_gib", "jax", "jax_backend")}
    machine["accelerator"] = None if info["jax_backend"] == "cpu" else info["jax_devices"]
    provenance = {"commit": git_commit(), "machine": machine, "command": command_line()}
    groups = group_order(plan, deadline, args, rows)
    jobs = min(args.jobs, len(plan.groups))  # a group left alone gets all the CPUs
    if jobs > 1:
        run_in_processes(groups, jobs, deadline, provenance, args, rows, preempted)
        return
    machine["process_cpus"] = len(usable_cpus())
    for cell, seeds in groups:
        if not run_group(cell, seeds, deadline, provenance, args, rows, preempted):
            return


def group_order(
    plan: Plan, deadline: float, args: Any, rows: list[dict[str, Any]]
) -> Iterator[tuple[Cell, list[int]]]:
    """The plan's groups in the order they start, each asked for when it can start (so the
    budget left and the rows recorded are those of that moment). A group that its cell's
    earlier groups say will not fit in the budget left waits while the others run; if budget
    is left after them, it starts anyway (a group checkpoints as it goes and at the deadline,
    and the next run resumes it), so a cell longer than any one call's budget still
    advances. None starts once the budget is spent."""
    later = []
    for cell, seeds in plan.groups:
        left = deadline - time.time()
        if left <= 0:
            return
        path = group_dir(args.results, cell, seeds)
        done = group_progress(path) / cell.config.total_steps  # a stopped group's share
        guess = estimate_seconds(cell, len(seeds), rows, path)
        if guess is not None and guess[0] * (1 - done) > left:
            print(
                f"later: {cell.algo} {cell.env} seeds {seeds}: ~{guess[0] * (1 - done) / 60:.0f} "
                f"min ({guess[1]}) > the budget left ({left / 60:.0f} min)"
            )
            if cell.schedule_updates is None:  # it can checkpoint
                later.append((cell, seeds))
            continue
        if guess is None and math.isfinite(left):
            print(
                f"{cell.algo} {cell.env}: no finished group of {cell.algo} to time it by; if the "
                "budget ends first, the group continues from its last checkpoint next time"
            )
        yield cell, seeds
    for cell, seeds in later:
        if deadline - time.time() <= 0:
            return
        print(
            f"nothing else fits: {cell.algo} {cell.env} starts, checkpointed at the deadline "
            "and resumed by the next run"
        )
        yield cell, seeds


# ------------------------------------------------------------------------ several processes
BUDGET_SPENT = 3  # exit status of a group's process stopped by the deadline
INTERRUPTED = 130  # exit status of a group's process interrupted (SIGTERM past its grace)


def run_in_processes(
    groups: Iterator[tuple[Cell, list[int]]],
    jobs: int,
    deadline: float,
    provenance: dict[str, Any],
    args: Any,
    rows: list[dict[str, Any]],
    preempted: Callable[[], bool] | None = None,
) -> None:
    """``--jobs``: up to ``jobs`` groups at once, each in a process of its own pinned to its own
    share of the CPUs (:func:`jaxrl.studies.processes.run_in_processes`; two groups on a core
    each train faster together than one on both, docs/benchmarks/scaling.md). Each process
    records its group's rows itself (the appends are locked), and this one reads them back
    when a group ends. A group that fails stops new ones from starting; the others finish,
    and the run then exits with an error naming it."""
    from jaxrl.studies.processes import Task
    from jaxrl.studies.processes import run_in_processes as run_tasks

    tasks = (
        Task(f"{cell.algo} {cell.env} seeds {seeds}", group_process,
             (cell, seeds, deadline, provenance, args))
        for cell, seeds in groups
    )  # fmt: skip

    def reread(_: Any) -> None:
        rows[:] = read_rows(args.results)

    ok = (0, BUDGET_SPENT, INTERRUPTED)
    ends = run_tasks(tasks, jobs, ok=ok, on_end=reread, stop=preempted)
    failed = [
        f"{end.task.label} (exit status {end.exit_status})"
        for end in ends
        if end.exit_status not in ok
    ]
    if failed:
        raise SystemExit(
            f"failed: {'; '.join(failed)} (tracebacks above); the other groups' rows are "
            "recorded, and a failed group resumes from its last checkpoint"
        )


def group_process(
    cell: Cell, seeds: list[int], deadline: float, provenance: dict[str, Any], args: Any
) -> int:
    """One group in a process of ``--jobs``: its rows record how many CPUs it had. Returns
    :data:`BUDGET_SPENT` (its exit status) when the deadline stopped it."""
    from jaxrl.runs.preemption import Preemption

    machine = {**provenance["machine"], "process_cpus": len(usable_cpus())}
    provenance = {**provenance, "machine": machine}
    preempted = Preemption(args.preemption_grace).install()
    try:
        done = run_group(
            cell, seeds, deadline, provenance, args, read_rows(args.results), preempted
        )
    except KeyboardInterrupt:  # no period ended within the grace: its last checkpoint stays
        print(f"  {cell.algo} {cell.env} seeds {seeds}: interrupted (resumable)", flush=True)
        return INTERRUPTED
    return 0 if done else BUDGET_SPENT


def run_group(
    cell: Cell,
    seeds: list[int],
    deadline: float,
    provenance: dict[str, Any],
    args: Any,
    rows: list[dict[str, Any]],
    preempted: Callable[[], bool] | None = None,
) -> bool:
    """Train one group (:func:`train_group`) and record its rows when it finishes (in the
    results file and in ``rows``). Returns False when the budget ran out during it, or
    ``preempted`` (SIGTERM) stopped it."""
    path = group_dir(args.results, cell, seeds)
    print(f"{cell.algo} {cell.env} seeds {seeds} ({cell.config.total_steps:,} steps each)")
    try:
        new = train_group(
            cell, seeds, deadline, provenance, path, args.stop_after_periods, preempted
        )
    except Deadline:
        print(
            f"budget spent during {cell.algo} {cell.env} seeds {seeds}: not recorded yet; "
            f"the next run resumes it from its checkpoint at {group_progress(path):,} env "
            "steps"
        )
        return False
    if new is None:
        print(f"  stopped at {group_progress(path):,} env steps (resumable)")
        return preempted is None or not preempted()
    append_rows(args.results, new)
    rows += new
    shutil.rmtree(path, ignore_errors=True)  # the rows hold what the table needs
    finals = ", ".join(f"{r['final_return']:.1f}" for r in new)
    print(f"  recorded seeds {seeds}: final returns {finals} ({new[0]['seconds']:.0f}s)")
    return True


def remaining(cells: Sequence[Cell], seeds: dict[str, list[int]], rows: list[dict]) -> list[str]:
    """One line per cell that still lacks seeds, with the time its earlier groups suggest."""
    lines = []
    for cell in cells:
        have = {r["seed"] for r in rows_of(cell, rows)}
        missing = [s for s in seeds[cell.algo] if s not in have]
        if missing:
            guess = estimate_seconds(cell, len(missing), rows)
            eta = f", ~{guess[0] / 60:.0f} min {guess[1]}" if guess else ""
            lines.append(f"{cell.algo} {cell.env}: {len(missing)} seeds to go {missing}{eta}")
    return lines


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


# ------------------------------------------------------------------------------ the table
@dataclass(frozen=True)
class CellResult:
    algo: str
    env: str
    seeds: int
    env_steps: int
    max_of_mean: float
    std_at_max: float
    final_mean: float
    final_std: float
    minutes: float
    steps: np.ndarray
    curves: np.ndarray  # [seeds, evaluations]
    commits: tuple[str, ...]
    episodes: tuple[int, ...]
    machines: tuple[str, ...]
    notes: tuple[str, ...] = ()


def cell_results(rows: Sequence[dict[str, Any]]) -> list[CellResult]:
    """One result per (algorithm, task) from full-budget rows; a cell whose rows come from
    more than one preset version or budget is an error."""
    cells: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        cells.setdefault((row["algo"], row["env"]), []).append(row)
    results = []
    for (algo, env), runs in sorted(cells.items()):
        versions = {(r.get("settings_id"), r["total_steps"]) for r in runs}
        if len(versions) > 1:
            raise SystemExit(
                f"{algo} on {env}: rows from {len(versions)} settings/budgets {sorted(versions)}"
                "; one cell takes one"
            )
        lengths = {len(r["eval_return"]) for r in runs}
        if len(lengths) > 1:
            raise SystemExit(f"{algo} on {env}: rows with different evaluation points")
        curves = np.array([r["eval_return"] for r in runs], float)
        mean = curves.mean(axis=0)
        best = int(np.argmax(mean))
        finals = np.array([r["final_return"] for r in runs], float)
        groups = {(r.get("commit"), r["seconds"], r["seeds_in_process"]) for r in runs}
        results.append(
            CellResult(
                algo=algo,
                env=env,
                seeds=len(runs),
                env_steps=int(runs[0]["env_steps"]),
                max_of_mean=float(mean[best]),
                std_at_max=float(curves[:, best].std()),
                final_mean=float(finals.mean()),
                final_std=float(finals.std()),
                minutes=sum(g[1] for g in groups) / 60,
                steps=np.array(runs[0]["eval_env_steps"], float),
                curves=curves,
                commits=tuple(sorted({_short_commit(r.get("commit")) for r in runs})),
                episodes=tuple(sorted({int(r.get("eval_episodes", 10)) for r in runs})),
                machines=tuple(sorted({_machine_name(r.get("machine")) for r in runs})),
                notes=_resume_notes(runs),
            )
        )
    return results


def _resume_notes(runs: Sequence[dict[str, Any]]) -> tuple[str, ...]:
    """What a cell's rows say of how they were trained: the seeds whose group resumed from a
    checkpoint, and where (a row records its group's last resume)."""
    resumed: dict[int, list[int]] = {}
    for row in runs:
        if row.get("resumed_at_env_steps"):
            resumed.setdefault(int(row["resumed_at_env_steps"]), []).append(int(row["seed"]))
    return tuple(
        f"seed{'s' * (len(seeds) > 1)} {', '.join(map(str, sorted(seeds)))} resumed from a "
        f"checkpoint at {steps:,} "
        "env steps (last resume; fresh environments, as `jaxrl train --resume`)"
        for steps, seeds in sorted(resumed.items())
    )


def read_deviations(source: Path) -> list[dict[str, Any]]:
    """Known deviations of a results file's rows from the cells' settings, committed beside it
    (``<stem>_deviations.json``: a list of ``{"algo", "env", "note"}``), for what the rows
    cannot record (a fault of the code that trained them, found later). None: ``[]``."""
    path = source.with_name(f"{source.stem}_deviations.json")
    if not path.exists():
        return []
    entries = json.loads(path.read_text())
    for i, entry in enumerate(entries):
        missing = {"algo", "env", "note"} - set(entry)
        if missing:
            raise SystemExit(f"{path}: entry {i} lacks {sorted(missing)}")
    return entries


def with_deviations(
    results: Sequence[CellResult], deviations: Sequence[dict[str, Any]]
) -> list[CellResult]:
    """``results`` with each deviation's note added to its cell's notes (a deviation of a
    cell without rows is left out)."""
    out = []
    for r in results:
        extra = tuple(d["note"] for d in deviations if (d["algo"], d["env"]) == (r.algo, r.env))
        out.append(dataclasses.replace(r, notes=(*extra, *r.notes)) if extra else r)
    return out


def _short_commit(commit: str | None) -> str:
    name, _, dirty = str(commit).partition("+")
    return name[:10] + (f"+{dirty}" if dirty else "")


def _machine_name(machine: dict[str, Any] | None) -> str:
    if not machine:
        return "unknown"
    accel = machine.get("accelerator")
    share = machine.get("process_cpus")  # rows of --jobs: a process had a share of the CPUs
    cores = f"{machine['cores']} cores" + (
        f", {share} per process" if share and share < machine["cores"] else ""
    )
    return f"{machine['cpu']} ({cores})" + (f", {accel[0]}" if accel else "")


def _verdict(result: CellResult) -> str:
    published = tianshou_mujoco(result.algo, result.env)
    if published is None:
        return "-"
    if result.env_steps < FULL_BUDGET_STEPS:
        return "shorter run"
    if result.max_of_mean >= published.mean:
        return "above mean"
    return "within 1 std" if result.max_of_mean >= published.mean - published.std else "BELOW"


def table_markdown(results: Sequence[CellResult], source: Path = Path(RESULTS_FILE)) -> str:
    """The whole ``mujoco_table.md``: what the table is, then :func:`table_block`."""
    episodes = "/".join(str(e) for e in sorted({e for r in results for e in r.episodes}))
    commits = sorted({c for r in results for c in r.commits})
    return "\n".join(
        [
            "# jaxrl on Tianshou's MuJoCo benchmark",
            "",
            "Generated by `python benchmarks/mujoco_table.py --table` from "
            f"`benchmarks/results/{source.name}`. Settings: jaxrl's `mujoco` preset "
            "(Tianshou's example scripts), gymnasium's v5 tasks on EnvPool.",
            f"Tianshou: {SOURCE}; gym 0.17.3 with mujoco 2.0 (v3 and v2 tasks).",
            "Statistic (both sides): the maximum over evaluations of the mean across seeds, "
            f"each seed's value the mean of {episodes} test episodes (Tianshou: 10); +- one std "
            "across seeds at that evaluation. 'vs Tianshou' compares it with Tianshou's mean and "
            "mean - 1 std.",
            "",
            table_block(results),
            f"Commits the rows were trained at: {', '.join(commits)}.",
            "",
        ]
    )


# rl-baselines3-zoo's published sb3-contrib TRPO results per task, (mean, std) over 3 seeds on
# the v3 tasks (the sb3-contrib docs' table; shared/reference/tuning-docs-stats.md).
RL_ZOO_TRPO = {
    "HalfCheetah": (1803, 46),
    "Hopper": (3372, 215),
    "Walker2d": (4502, 234),
    "Ant": (3554, 591),
    "Swimmer": (359, 2),
}


@dataclass(frozen=True)
class TunedResult:
    """``--preset mujoco-tuned`` on a task's held-out seeds
    (``results/tuned_heldout_ALGO_TASK.json``): Tianshou's statistic (the maximum over
    evaluations of the mean across seeds, +- the std at that evaluation) and the final
    policy's deterministic evaluation, mean +- std over seeds."""

    seeds: int
    max_of_mean: float
    std_at_max: float
    final_mean: float
    final_std: float


TUNED_RESULTS = BENCH_DIR / "results"  # where tuned_heldout_ALGO_TASK.json are


def tuned_result(task: str, results: Path | None = None, algo: str = "trpo") -> TunedResult | None:
    """The held-out result of ``algo`` 's tuned preset on ``task`` (``"Hopper"``), None
    before its study's best has been trained on held-out seeds."""
    path = (results or TUNED_RESULTS) / f"tuned_heldout_{algo}_{task.lower()}.json"
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    steps = sorted(data["evaluations"], key=int)
    curves = np.array([data["evaluations"][s] for s in steps], float).T  # [seeds, evals]
    mean = curves.mean(axis=0)
    best = int(np.argmax(mean))
    finals = np.array(data["final_deterministic"], float)
    return TunedResult(
        len(finals),
        float(mean[best]),
        float(curves[:, best].std()),
        float(finals.mean()),
        float(finals.std()),
    )


def _tuned_cells(algo: str, task: str) -> list[str]:
    """The tuned columns of a row: the tuned preset on held-out seeds (TRPO, and NPG where
    its study's best has been trained on them) and rl-zoo's published TRPO ("-" for other
    algorithms and tasks)."""
    tuned = tuned_result(task, algo=algo) if algo in ("trpo", "npg") else None
    zoo = "-"
    if algo == "trpo" and task in RL_ZOO_TRPO:
        zoo = "{} +- {}".format(*RL_ZOO_TRPO[task])
    if tuned is None:
        return ["-" if zoo == "-" else "study running", zoo]
    return [
        f"{tuned.max_of_mean:.1f} +- {tuned.std_at_max:.1f}; final "
        f"{tuned.final_mean:.1f} +- {tuned.final_std:.1f} ({tuned.seeds} seeds)",
        zoo,
    ]


def table_block(results: Sequence[CellResult]) -> str:
    """The table itself: a row per cell (footnote marks on cells with notes), the notes, and
    the machines the rows came from (their commits are in ``mujoco_table.md``). What the
    learning page of the benchmarks shows between :data:`BLOCK_BEGIN` and :data:`BLOCK_END`."""
    rows = []
    notes: list[str] = []
    for r in results:
        published = tianshou_mujoco(r.algo, r.env)
        task = task_of(r.env)
        marks = ""
        for note in r.notes:
            notes.append(f"[{len(notes) + 1}] {r.algo.upper()} {r.env}: {note}")
            marks += f" [{len(notes)}]"
        rows.append(
            [
                f"{task} ({r.env.rsplit('-', 1)[1]}; Tianshou {TASK_VERSIONS.get(task, '?')})",
                r.algo.upper() + marks,
                f"{r.max_of_mean:.1f} +- {r.std_at_max:.1f}",
                str(published) if published else "-",
                _verdict(r),
                f"{r.final_mean:.1f} +- {r.final_std:.1f}",
                *_tuned_cells(r.algo, task),
                f"{r.seeds}",
                f"{r.env_steps:,}",
                f"{r.minutes:.0f}",
            ]
        )
    headers = [
        "task",
        "algo",
        "jaxrl: max over evaluations of the seeds' mean +- std",
        "Tianshou (10 seeds)",
        "vs Tianshou",
        "jaxrl final evaluation, mean +- std",
        "tuned (`mujoco-tuned`, held-out seeds): Tianshou's statistic; final",
        "rl-zoo TRPO (3 seeds, final)",
        "seeds",
        "env steps / seed",
        "wall minutes (cell)",
    ]
    machines = sorted({m for r in results for m in r.machines})
    return "\n".join(
        [
            markdown_table(headers, rows),
            "",
            *(f"{note}  " for note in notes),
            *([""] if notes else []),
            "Tuned: `--preset mujoco-tuned` (each task's study's best trial, "
            "docs/benchmarks/tuning.md) trained on 10 seeds no search used "
            "(`benchmarks/results/tuned_heldout_ALGO_TASK.json`), deterministic evaluations; "
            "'study running' where that run is not in yet. rl-zoo: sb3-contrib's TRPO with "
            "rl-baselines3-zoo's tuned settings, its published final evaluation (v3 tasks).",
            "",
            f"Machines: {'; '.join(machines)}.",
            "",
        ]
    )


def _short(value: float) -> str:
    """A return as the headline shows it: whole numbers, one decimal below 100."""
    return f"{value:.1f}" if abs(value) < 100 else f"{value:.0f}"


def headline_block(results: Sequence[CellResult]) -> str:
    """The table's headline, as the README shows it between :data:`BLOCK_BEGIN` and
    :data:`BLOCK_END`: a row per task, a column per algorithm, each cell jaxrl's statistic
    against Tianshou's published mean and the verdict; a cell with notes is marked ``*``
    (the notes are under the full table)."""
    algos = [a for a in ("trpo", "npg", "ddpg") if any(r.algo == a for r in results)]
    tasks = sorted({task_of(r.env) for r in results})
    by_cell = {(task_of(r.env), r.algo): r for r in results}
    rows = []
    for task in tasks:
        cells = []
        for algo in algos:
            r = by_cell.get((task, algo))
            published = tianshou_mujoco(r.algo, r.env) if r else None
            if r is None:
                cells.append("-")
                continue
            text = _short(r.max_of_mean)
            if published is not None:
                text += f" vs {_short(published.mean)}: {_verdict(r)}"
            cells.append(text + (" *" if r.notes else ""))
        rows.append([task, *cells])
    seeds = ", ".join(
        f"{a.upper()} {'/'.join(str(n) for n in sorted({r.seeds for r in results if r.algo == a}))}"
        for a in algos
    )
    return "\n".join(
        [
            markdown_table(["task", *(a.upper() for a in algos)], rows),
            "",
            "jaxrl's maximum over evaluations of the mean across seeds vs Tianshou's published",
            f"mean (seeds: {seeds}); `*`: a cell with notes, under the full table.",
            "",
        ]
    )


# The documents that show the table of the table's own results file, and the block each
# shows: the learning page the whole table, the README its headline. The generated block goes
# between these two lines (``--table`` rewrites it; a test checks it is current).
LEARNING_PAGE = BENCH_DIR.parent / "docs" / "benchmarks" / "learning.md"
SHOWN_IN: dict[Path, Callable[[Sequence[CellResult]], str]] = {
    LEARNING_PAGE: table_block,
    BENCH_DIR.parent / "README.md": headline_block,
}
BLOCK_BEGIN = "<!-- begin: the table as `python benchmarks/mujoco_table.py --table` writes it -->"
BLOCK_END = "<!-- end: the table -->"


def shown_block(document: Path) -> str:
    """The text between :data:`BLOCK_BEGIN` and :data:`BLOCK_END` in ``document``, less the
    blank line after the first and before the second; a SystemExit names the document and
    the markers it lacks."""
    text = document.read_text()
    begin, end = text.find(BLOCK_BEGIN), text.find(BLOCK_END)
    if begin < 0 or end < begin or text.count(BLOCK_BEGIN) != 1 or text.count(BLOCK_END) != 1:
        raise SystemExit(
            f"{document}: needs the table's markers once each, in this order, on lines of "
            f"their own where the table goes:\n  {BLOCK_BEGIN}\n  {BLOCK_END}"
        )
    return text[begin + len(BLOCK_BEGIN) : end].strip("\n")


def show_in(document: Path, block: str) -> bool:
    """Put ``block`` between the markers of ``document`` (:func:`shown_block`); True when
    the document changed."""
    old = shown_block(document)
    if old == block.strip("\n"):
        return False
    text = document.read_text()
    head, rest = text.split(BLOCK_BEGIN)
    tail = rest.split(BLOCK_END)[1]
    document.write_text(f"{head}{BLOCK_BEGIN}\n\n{block.strip(chr(10))}\n\n{BLOCK_END}{tail}")
    return True


def t_quantile_975(dof: int) -> float:
    """Student's t 97.5% quantile (95% two-sided CI), from scipy when available."""
    try:
        from scipy import stats

        return float(stats.t.ppf(0.975, dof))
    except ImportError:  # pragma: no cover - scipy comes with the stack
        return 1.96


def table_figure(results: Sequence[CellResult], path: Path) -> None:
    plt = pyplot()
    if plt is None or not results:
        return
    envs = sorted({r.env for r in results})
    cols = min(4, len(envs))
    nrows = math.ceil(len(envs) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.6 * cols, 3.5 * nrows), squeeze=False)
    colors = {"trpo": "C0", "npg": "C1", "ddpg": "C2"}
    for ax, env in zip(axes.flat, envs, strict=False):
        for r in results:
            if r.env != env:
                continue
            color = colors.get(r.algo, "C3")
            mean = r.curves.mean(0)
            if r.seeds > 1:
                half = t_quantile_975(r.seeds - 1) * r.curves.std(0, ddof=1) / np.sqrt(r.seeds)
                ax.fill_between(r.steps, mean - half, mean + half, color=color, alpha=0.2)
            ax.plot(r.steps, mean, color=color, label=f"jaxrl {r.algo.upper()} ({r.seeds})")
            published = tianshou_mujoco(r.algo, r.env)
            if published is not None:
                ax.axhspan(
                    published.mean - published.std,
                    published.mean + published.std,
                    color=color,
                    alpha=0.08,
                    hatch="//",
                )
                ax.axhline(published.mean, color=color, ls="--", lw=1)
        ax.set_title(env)
        ax.set_xlabel("env steps")
        ax.xaxis.set_major_formatter(lambda x, _: f"{x / 1e6:g}M")
        ax.set_ylabel("evaluation return")
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(envs) :]:
        ax.axis("off")
    fig.suptitle(
        "jaxrl: mean across seeds, band 95% CI\n"
        "Tianshou's published 1M-step result: dashed mean, hatched +- 1 std",
        fontsize=8,
    )
    save_figure(plt, fig, path)


def write_table(
    rows: Sequence[dict[str, Any]],
    out: Path,
    source: Path = Path(RESULTS_FILE),
    documents: Mapping[Path, Callable[[Sequence[CellResult]], str]] | Sequence[Path] = (),
) -> str:
    """The table and figure of ``rows`` (read from the results file ``source``), named
    after it: ``mujoco_table.{md,png}`` for the table's own file, so a results file of
    another setting (``--lr-schedule-updates``) never overwrites them; and in each of
    ``documents`` its block (:func:`show_in`): the block a mapping gives for it (as
    :data:`SHOWN_IN`), or the whole table (:func:`table_block`) for a plain sequence."""
    results = with_deviations(cell_results(rows), read_deviations(source))
    text = table_markdown(results, source)
    (out / f"{source.stem}.md").write_text(text)
    print(f"wrote {out / f'{source.stem}.md'}")
    table_figure(results, out / f"{source.stem}.png")
    if not isinstance(documents, Mapping):
        documents = dict.fromkeys(documents, table_block)
    for document, make_block in documents.items():
        changed = show_in(document, make_block(results))
        print(f"{'updated' if changed else 'unchanged'}: the table in {document}")
    return text


# ------------------------------------------------------------------------------ command
def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--cells", default="all", choices=sorted(CELL_SETS))
    parser.add_argument("--algos", nargs="+", default=None, help="only these algorithms")
    parser.add_argument(
        "--envs",
        nargs="+",
        default=None,
        help="only these tasks (ids); an id of another version of a task (Ant-v3) runs that "
        "task's cells on it, a setting of its own: give its rows their own --results file",
    )
    parser.add_argument(
        "--num-seeds", type=int, default=None, help="seeds per cell (default 10, DDPG 3)"
    )
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--seeds-per-process", type=int, default=None)
    parser.add_argument(
        "--total-steps", type=int, default=None, help="default: 1,000,000 (--quick: 2,048)"
    )
    parser.add_argument("--eval-every", type=int, default=None, help="default: the preset's")
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--env-backend", default="auto", choices=["auto", "gymnasium", "envpool"])
    parser.add_argument("--budget-minutes", type=float, default=None)
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="groups trained at once, each in a process of its own on its own share of the "
        "CPUs (default 1: one after another in this process)",
    )
    parser.add_argument(
        "--stop-after-periods",
        type=int,
        default=None,
        help="end each group after this many evaluation periods of this call, checkpointed "
        "(the next run resumes it); for tests and short slots",
    )
    parser.add_argument(
        "--preemption-grace",
        type=float,
        default=20.0,
        help="after SIGTERM, seconds for the groups under way to reach the end of an "
        "evaluation period and checkpoint it (the next run resumes them)",
    )
    parser.add_argument("--results", type=Path, default=None, help="the JSONL results file")
    parser.add_argument("--table", action="store_true", help="only write the table and figure")
    parser.add_argument(
        "--lr-schedule-updates",
        type=int,
        default=None,
        help="size the linear learning-rate schedule for this many updates instead of the "
        "run's (Tianshou's example scripts run 3M steps: 3000 updates, 2/3 of the rate left "
        "at 1M); a setting of its own: give these rows their own --results file",
    )
    args = parser.parse_args(argv)
    try:
        check_jobs(args.jobs)
    except ValueError as error:
        parser.error(str(error))
    if args.stop_after_periods is not None and args.stop_after_periods < 1:
        parser.error(f"--stop-after-periods must be at least 1, got {args.stop_after_periods}")
    args.hyperparameters = {}
    args.total_steps = args.total_steps or (None if args.quick else 1_000_000)
    if args.quick:  # a smoke run: one cheap task, a tiny budget, DDPG mostly warm-up
        args.cells, args.envs = "all", ["InvertedPendulum-v5", "Hopper-v5"]
        args.algos = args.algos or ["trpo", "ddpg"]
        args.num_seeds, args.eval_every = 2, 1024
        args.total_steps = args.total_steps or 2048
        args.eval_episodes = 2
        args.hyperparameters = {"ddpg": {"warmup_steps": 1536, "buffer_size": 4096}}
    return args


def select_cells(args: argparse.Namespace) -> list[tuple[str, str]]:
    """The (algorithm, env id) cells to run. ``--envs`` names tasks by id; an id of another
    version of a table task (``Ant-v3``: EnvPool's v3 computes no contact forces, as
    Tianshou's mujoco-py 2.0 did) runs that task's cells on it."""
    wanted = None if args.envs is None else _wanted_tasks(args.envs, args.cells)
    cells = [
        (algo, env if wanted is None else wanted[task_of(env)])
        for algo, env in CELL_SETS[args.cells]
        if (args.algos is None or algo in args.algos) and (wanted is None or task_of(env) in wanted)
    ]
    if args.quick:
        cells = [("trpo", "InvertedPendulum-v5"), ("ddpg", "Hopper-v5")]
    if not cells:
        raise SystemExit(f"no cells of --cells {args.cells} match --algos/--envs")
    return cells


def _wanted_tasks(envs: Sequence[str], cells: str) -> dict[str, str]:
    """``--envs`` as task -> env id; an id of no task of ``--cells``, or two ids of one
    task, is refused (a cell would otherwise be silently dropped or replaced)."""
    tasks = {task_of(env) for _, env in CELL_SETS[cells]}
    unknown = [env for env in envs if task_of(env) not in tasks]
    if unknown:
        raise SystemExit(
            f"--envs {' '.join(unknown)}: not a task of --cells {cells} "
            f"({', '.join(sorted(tasks))})"
        )
    wanted: dict[str, str] = {}
    for env in envs:
        if wanted.setdefault(task_of(env), env) != env:
            raise SystemExit(f"--envs {wanted[task_of(env)]} {env}: two versions of one task")
    return wanted


def check_own_results_file(cells: Sequence[tuple[str, str]], args: argparse.Namespace) -> None:
    """A setting other than the table's (another task version, a resized schedule) keeps its
    rows in a results file of its own: the table's file holds Tianshou's cells only."""
    if args.results.name != RESULTS_FILE:
        return
    other = sorted({env for algo, env in cells if (algo, env) not in CELL_SETS["all"]})
    if other:
        raise SystemExit(
            f"--envs {' '.join(other)}: not the table's v5 tasks; give these rows their own "
            f"--results file (not {RESULTS_FILE})"
        )
    if args.lr_schedule_updates is not None:
        raise SystemExit(
            f"--lr-schedule-updates: a setting of its own; give its rows their own --results "
            f"file (not {RESULTS_FILE})"
        )


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    out = output_dir(args)
    args.results = args.results or out / RESULTS_FILE
    if not args.table:
        if not mujoco_available():
            raise SystemExit('MuJoCo is not installed: pip install -e ".[envpool]"')
        selected = select_cells(args)
        check_own_results_file(selected, args)
        cells = [make_cell(a, e, args.total_steps, args) for a, e in selected]
        seeds = {
            algo: list(range(args.first_seed, args.first_seed + (args.num_seeds or n)))
            for algo, n in DEFAULT_SEEDS.items()
        }
        rows = read_rows(args.results)
        remove_recorded_groups(args.results, rows)
        plan = make_plan(cells, seeds, rows, args)
        print(f"{len(plan.groups)} groups to train; results in {args.results}")
        from jaxrl.runs.preemption import Preemption

        preemption = Preemption(args.preemption_grace).install()
        try:
            run_plan(plan, args, rows, preemption)
        except KeyboardInterrupt:  # Ctrl-C, or SIGTERM's grace ran out before a period ended
            print(
                "Interrupted: the finished groups are recorded and the ones under way keep "
                f"their last checkpoint. Continue with: {command_line()}",
                file=sys.stderr,
            )
            raise SystemExit(130) from None
        preemption.disarm()
        if preemption.requested and remaining(cells, seeds, rows):
            print(
                "Stopped by SIGTERM: the groups under way are checkpointed and the finished "
                f"ones recorded. Continue with: {command_line()}",
                file=sys.stderr,
            )
            raise SystemExit(130)
        left = remaining(cells, seeds, rows)
        print("Remaining:" if left else "Every cell asked for is complete.")
        for line in left + stopped_groups(args.results):
            print("  " + line)
    rows = read_rows(args.results)
    own_file = Path(args.results).resolve() == (BENCH_DIR / "results" / RESULTS_FILE).resolve()
    if rows:
        print(write_table(rows, out, args.results, SHOWN_IN if own_file else ()))


if __name__ == "__main__":
    main()
