"""Live progress of a run on stderr: a rich progress bar in a terminal (env steps, steps/s,
latest evaluation return, elapsed and remaining time), one plain line per evaluation when
stderr is a file or a pipe (logs, CI), with the same figures (one line, wrapped here):

    DDPG Hopper-v5 x3 | env steps 195,000/1,000,000 per seed | 52 steps/s per seed
    (157 in all) | eval return 553.7 +- 145.7 | 1:11:35 | eta 4:17:59

Env steps and their rate count one seed's steps (the seeds advance together), so that the
remaining time is the remaining steps over the rate; the rate of all seeds together is in
brackets. Rates are measured over the interval since the previous update."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def _format_count(rate: float) -> str:
    if rate >= 1e4:
        return f"{rate / 1e3:,.0f}k"
    if rate >= 1e3:
        return f"{rate / 1e3:,.1f}k"
    return f"{rate:,.0f}"


def _format_rate(rate_per_seed: float | None, num_seeds: int) -> str:
    """``"52 steps/s per seed (157 in all)"``; one seed: ``"108 steps/s"``."""
    if rate_per_seed is None:
        return "- steps/s"
    in_all = _format_count(rate_per_seed * num_seeds)
    every = f" per seed ({in_all} in all)" if num_seeds > 1 else ""
    return f"{_format_count(rate_per_seed)} steps/s{every}"


def _format_elapsed(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}"


class RunProgress:
    """Progress of one run.

    Args:
      description: what is trained, e.g. ``"TRPO Pendulum-v1 x4"``.
      total_steps: env steps per seed at the end of the run.
      num_seeds: seeds trained together (they advance together: steps and steps/s are
        one seed's; the line adds the rate of all seeds).
      start_steps: env steps per seed already done (a resumed run).
      console: a ``rich.console.Console`` (default: stderr).
      eval_label: what the evaluation figure is (a study's group: its best setting's).
    """

    def __init__(
        self,
        description: str,
        total_steps: int,
        num_seeds: int = 1,
        start_steps: int = 0,
        console: Any = None,
        eval_label: str = "eval return",
    ) -> None:
        from rich.console import Console

        self.console = console or Console(stderr=True)
        self.description = description
        self.eval_label = eval_label
        self.total = total_steps
        self.num_seeds = num_seeds
        self.steps = start_steps
        self.eval_text = "-"
        self.rate: float | None = None  # env steps per second, one seed's
        self._start = time.perf_counter()
        self._last = (self._start, start_steps)
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> RunProgress:
        if self.console.is_terminal:
            from rich.progress import (
                BarColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                SpinnerColumn(),
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                TextColumn("{task.completed:,.0f}/{task.total:,.0f} env steps"),
                TextColumn("[cyan]{task.fields[rate]}"),
                TextColumn(
                    f"{self.eval_label.removesuffix(' return')} [bold green]{{task.fields[eval]}}"
                ),
                TimeElapsedColumn(),
                TextColumn("eta"),
                TimeRemainingColumn(),
                console=self.console,
            )
            self._bar.__enter__()
            self._task = self._bar.add_task(
                self.description,
                total=self.total,
                completed=self.steps,
                rate="compiling",
                eval=self.eval_text,
            )
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)
            self._bar = None

    def update(
        self, env_steps: int, eval_return: float | None = None, eval_std: float | None = None
    ) -> None:
        """Record progress: env steps per seed so far and, after an evaluation, its mean
        return across seeds (and the standard deviation across seeds)."""
        now = time.perf_counter()
        last_time, last_steps = self._last
        if env_steps > last_steps and now > last_time:
            self.rate = (env_steps - last_steps) / (now - last_time)
        self._last = (now, env_steps)
        self.steps = env_steps
        if eval_return is not None:
            self.eval_text = f"{eval_return:,.1f}"
            if eval_std is not None and self.num_seeds > 1:
                self.eval_text += f" +- {eval_std:,.1f}"
        if self._bar is not None:
            self._bar.update(
                self._task,
                completed=env_steps,
                rate=_format_rate(self.rate, self.num_seeds),
                eval=self.eval_text,
            )
        elif eval_return is not None:
            per_seed = " per seed" if self.num_seeds > 1 else ""
            self.console.print(
                f"{self.description} | env steps {env_steps:,}/{self.total:,}{per_seed} | "
                f"{_format_rate(self.rate, self.num_seeds)} | {self.eval_label} {self.eval_text} | "
                f"{_format_elapsed(now - self._start)} | eta {self._remaining()}",
                highlight=False,
                soft_wrap=True,
            )

    def _remaining(self) -> str:
        """The remaining env steps over the latest rate, ``H:MM:SS`` (``-`` before a rate)."""
        if self.rate is None or self.rate <= 0:
            return "-"
        return _format_elapsed(max(self.total - self.steps, 0) / self.rate)

    def print(self, text: str) -> None:
        """A message above the bar (or a plain line)."""
        self.console.print(text, highlight=False, soft_wrap=True)


def group_progress(label: str, configs: Any, quiet: bool = False) -> RunProgress:
    """The progress of a study's group of ``configs`` (its settings train together, their
    seeds advancing as one run's), as ``jaxrl train``'s: ``label`` (e.g. ``"group 2/3"``)
    names the group, and the evaluation figure is the best setting's mean return across its
    seeds (:func:`update_group`). ``quiet``: prints nothing (a process of a job
    other than process 0)."""
    first, several = configs[0], len(configs) > 1
    settings = f" {len(configs)} settings" if several else ""
    progress = RunProgress(
        f"{label} {first.algo.upper()} {first.env}{settings} x{first.num_seeds}",
        first.layout.total_steps,
        first.num_seeds * len(configs),
        eval_label="best eval return" if several else "eval return",
    )
    progress.console.quiet = quiet
    return progress


def update_group(
    progress: RunProgress, then: Callable[[int, int, list], bool] | None = None
) -> Callable[[int, int, list], bool]:
    """A group's ``on_period(period, env_steps, returns)`` that updates ``progress`` after
    each evaluation (``returns``: each setting's ``[num_seeds]``; the figure is the best
    setting's mean and the standard deviation across its seeds), then returns what ``then``
    returns (whether to stop the group; False without one)."""
    import numpy as np

    def on_period(period: int, env_steps: int, returns: list) -> bool:
        means = [float(np.mean(r)) for r in returns]
        best = int(np.nanargmax(means)) if not all(np.isnan(means)) else 0
        progress.update(env_steps, means[best], float(np.std(returns[best])))
        return False if then is None else then(period, env_steps, returns)

    return on_period
