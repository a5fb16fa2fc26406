"""The run's progress line in logs (``jaxrl.runs.progress``): steps, rate and remaining time
in one seed's units, the rate of all seeds beside it."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from jaxrl.runs import progress as progress_module
from jaxrl.runs.progress import RunProgress


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(progress_module.time, "perf_counter", clock)
    return clock


def _lines(num_seeds: int, clock: Clock, start_steps: int = 0) -> list[str]:
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=300)
    with RunProgress(
        "DDPG Hopper-v5 x3", 1_000_000, num_seeds, start_steps, console=console
    ) as progress:
        clock.now += 50.0
        progress.update(start_steps + 5_000)  # no evaluation: no line
        clock.now += 100.0
        progress.update(start_steps + 10_000, 553.7, 145.7)
    return out.getvalue().splitlines()


def test_the_line_counts_one_seeds_steps_and_its_remaining_time(clock):
    """3 seeds, 5,000 steps of each in 100 s: 50 steps/s per seed, 150 in all; 990,000 steps
    of each seed remain: 19,800 s (5:30:00), not a third of it."""
    (line,) = _lines(3, clock)
    assert line == (
        "DDPG Hopper-v5 x3 | env steps 10,000/1,000,000 per seed | 50 steps/s per seed "
        "(150 in all) | eval return 553.7 +- 145.7 | 0:02:30 | eta 5:30:00"
    )


def test_one_seed_and_a_resumed_run(clock):
    """One seed: no 'per seed', no sum; a run resumed at 500,000 steps measures its rate from
    there (the steps before it took no time in this process)."""
    (line,) = _lines(1, clock, start_steps=500_000)
    assert line == (
        "DDPG Hopper-v5 x3 | env steps 510,000/1,000,000 | 50 steps/s | eval return 553.7 | "
        "0:02:30 | eta 2:43:20"
    )


def test_no_rate_before_any_steps(clock):
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=300)
    with RunProgress("TRPO Pendulum-v1 x4", 1000, 4, console=console) as progress:
        progress.update(0, -1200.0, 10.0)
    assert (
        out.getvalue()
        .strip()
        .endswith("| - steps/s | eval return -1,200.0 +- 10.0 | 0:00:00 | eta -")
    )
