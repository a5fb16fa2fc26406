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

The command and its plan are here; a cell, its rows in the results file and a group's
training in ``mujoco_table_cells.py``; the table and the pages that show it in
``mujoco_table_page.py``.
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common import (
    BENCH_DIR,
    base_parser,
    command_line,
    git_commit,
    machine_info,
    mujoco_available,
    output_dir,
    print_machine,
)
from mujoco_table_cells import (
    CELL_SETS,
    DEFAULT_GROUP,
    DEFAULT_SEEDS,
    RESULTS_FILE,
    Cell,
    Deadline,
    append_rows,
    check_cell_rows,
    estimate_seconds,
    group_dir,
    group_progress,
    make_cell,
    read_rows,
    remove_recorded_groups,
    rows_of,
    stopped_groups,
    train_group,
)
from mujoco_table_page import SHOWN_IN, write_table

from jaxrl.runs.published import task_of
from jaxrl.studies.processes import check_jobs, usable_cpus


# ------------------------------------------------------------------------------ the plan
@dataclass
class Plan:
    """The groups still to train, and what was skipped."""

    groups: list[tuple[Cell, list[int]]] = field(default_factory=list)
    done: dict[tuple[str, str], int] = field(default_factory=dict)


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


# The code that trains, as git pathspecs from the repository's top (the results it writes
# aside): a row's commit is ``+dirty`` when a tracked file of it differs from the commit.
TRAINING_CODE = (":(top)jaxrl", ":(top)benchmarks", ":(top,exclude)benchmarks/results")


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
    provenance = {
        "commit": git_commit(TRAINING_CODE) or "unknown",
        "machine": machine,
        "command": command_line(),
    }
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
        # DDPG's networks at 64 x 64, not 256 x 256: its group of 3,072 env steps trains in
        # 12 s, not about 36 s (the tests' runs of the table check its plumbing).
        small = {"warmup_steps": 1536, "buffer_size": 4096, "hidden_sizes": (64, 64)}
        args.hyperparameters = {"ddpg": small}
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
