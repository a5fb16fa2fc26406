"""Work side by side on one machine: tasks in processes of their own, each pinned to its own
share of the CPUs.

A host-environment run (MuJoCo on EnvPool or gymnasium) keeps a CPU busy with the
environment, acting and Python between its jitted updates, and XLA's threads split only the
updates' products. On a 2-core CPU two DDPG groups pinned to a core each trained 16% more env
steps per second together than one group on both cores (docs/benchmarks/scaling.md,
"Processes: groups side by side");
on a machine with many cores, runs side by side are the way to use them. XLA sizes its thread
pool to the CPUs a process may use, and its float rounding depends on that count: a task's
numbers are those of a run on as many CPUs.

``jaxrl sweep --jobs N`` and ``benchmarks/mujoco_table.py --jobs N`` use
:func:`run_in_processes`.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any

__all__ = [
    "Task",
    "TaskEnd",
    "check_jobs",
    "cpu_shares",
    "run_in_processes",
    "start_on",
    "usable_cpus",
]


def usable_cpus() -> list[int]:
    """The CPUs this process may run on (its affinity; all of them where that is unknown)."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def cpu_shares(jobs: int) -> list[list[int]]:
    """This process's CPUs dealt into ``jobs`` disjoint shares, as even as they divide
    (``jobs`` from 1 to the number of CPUs: :func:`check_jobs`)."""
    cpus = usable_cpus()
    return [cpus[i * len(cpus) // jobs : (i + 1) * len(cpus) // jobs] for i in range(jobs)]


def check_jobs(jobs: int, name: str = "--jobs") -> int:
    """``jobs`` if it is from 1 to this process's CPUs, else ``ValueError`` naming ``name``."""
    cpus = len(usable_cpus())
    if isinstance(jobs, bool) or not isinstance(jobs, int) or not 1 <= jobs <= cpus:
        raise ValueError(f"{name} must be from 1 to this process's {cpus} CPUs, got {jobs!r}")
    return jobs


def start_on(cpus: Sequence[int] | None, start: Callable[[], Any]) -> Any:
    """``start()`` (which starts a process) with this thread pinned to ``cpus`` for that
    moment only, so that the new process is born on them: a child inherits the affinity of
    the thread that starts it (unlike ``preexec_fn``, this is safe beside other threads).
    ``None``, or a system without affinity (macOS, Windows): started unpinned."""
    if cpus is None or not hasattr(os, "sched_setaffinity"):
        return start()
    own = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        return start()
    finally:
        os.sched_setaffinity(0, own)


@dataclasses.dataclass(frozen=True)
class Task:
    """``function(*args)`` in a process of its own, named ``label`` in messages. ``function``
    must be importable by name (a module's top-level function): the process is started fresh
    (``spawn``). Its return value, an ``int`` or None (0), is the process's exit status."""

    label: str
    function: Callable[..., int | None]
    args: tuple[Any, ...] = ()


@dataclasses.dataclass(frozen=True)
class TaskEnd:
    """How a task's process ended: ``exit_status`` (1: it raised, its traceback printed;
    negative: killed by that signal) on ``cpus``."""

    task: Task
    exit_status: int
    cpus: tuple[int, ...]


def run_in_processes(
    tasks: Iterator[Task],
    jobs: int,
    *,
    ok: Collection[int] = (0,),
    on_end: Callable[[TaskEnd], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> list[TaskEnd]:
    """Run ``tasks``, up to ``jobs`` at once, each in a fresh process pinned to its own share
    of this process's CPUs (:func:`cpu_shares`; a share is given to the next task when its
    process ends). The next task is asked for only when a share is free, so ``tasks`` may
    decide it then (a budget, results written by the tasks before it). A task whose exit
    status is not in ``ok`` stops new tasks from starting; the running ones finish. A task's
    process exits when this process is gone (killed), and if this one is interrupted
    (``KeyboardInterrupt``) the running tasks are terminated before it re-raises. ``stop``
    (this process's SIGTERM, :class:`jaxrl.runs.preemption.Preemption`) is asked every half
    second: once it is True no task starts, and each running task's process is sent SIGTERM
    to stop as it handles it (a run checkpoints its period).

    Returns:
      How each task ended (:class:`TaskEnd`), in the order they ended; ``on_end`` is called
      with each as it ends.
    """
    import multiprocessing
    from multiprocessing.connection import wait

    context = multiprocessing.get_context("spawn")
    free = cpu_shares(check_jobs(jobs, "jobs"))
    running: dict[Any, tuple[Any, Task, list[int]]] = {}
    ended: list[TaskEnd] = []
    signalled = False
    try:
        while True:
            stopping = signalled or any(end.exit_status not in ok for end in ended)
            while free and not stopping and (task := next(tasks, None)) is not None:
                cpus = free.pop(0)
                process = context.Process(target=_task_process, args=(task, os.getpid()))
                start_on(cpus, process.start)
                running[process.sentinel] = (process, task, cpus)
            if not running:
                return ended
            if stop is not None and not signalled and stop():
                signalled = True
                for process, _, _ in running.values():
                    process.terminate()  # SIGTERM
            for sentinel in wait(list(running), timeout=None if stop is None else 0.5):
                process, task, cpus = running.pop(sentinel)
                process.join()
                free.append(cpus)
                end = TaskEnd(task, int(process.exitcode), tuple(cpus))
                ended.append(end)
                if on_end is not None:
                    on_end(end)
    except BaseException:
        for process, _, _ in running.values():
            process.terminate()
        for process, _, _ in running.values():
            process.join()
        raise


def _task_process(task: Task, parent: int) -> None:
    """A task's process: it exits when ``parent`` is gone, prints whole lines (several
    processes share the output), and exits with the task's status (multiprocessing prints
    the traceback of a task that raised, and its status is then 1)."""
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)
    sys.exit(task.function(*task.args) or 0)


def _exit_with_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(1)
    os._exit(1)
