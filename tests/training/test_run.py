"""The period loop (:mod:`jaxrl.training.run`) with a recorder of research code's own: what
it is told, in order, without a run directory."""

from __future__ import annotations

from typing import Any

import numpy as np

from jaxrl.config.run_config import RunConfig
from jaxrl.runs import make_loop
from jaxrl.training.run import Recorder, run_periods


class ListRecorder:
    """Keeps every call, and checkpoints every second period."""

    def __init__(self, num_periods: int) -> None:
        self.period, self.num_periods, self.env_steps = 0, num_periods, 0
        self.eval_returns = np.full(2, np.nan)
        self.calls: list[tuple[Any, ...]] = []

    def log_evals(self, returns: np.ndarray, env_steps: int) -> None:
        self.calls.append(("evals", self.period, env_steps, np.shape(returns)))

    def end_period(self, metrics: dict[str, np.ndarray], first_update: int) -> None:
        self.period += 1
        self.env_steps = int(metrics["eval/env_steps"][0])
        self.eval_returns = np.asarray(metrics["eval/return"])
        self.calls.append(("period", self.period, self.env_steps, first_update))
        self.calls.append(("updates", np.shape(metrics["env_steps"])))

    def checkpoint_due(self) -> bool:
        return self.period % 2 == 0

    def save(self, tree: Any) -> None:
        self.calls.append(("save", self.period))

    def finish(self, episodes: int, deterministic: np.ndarray, stochastic: Any) -> None:
        self.calls.append(("finish", episodes, np.shape(deterministic), np.shape(stochastic)))


def test_run_periods_tells_its_recorder_each_evaluation_period_and_the_final_evaluation():
    config = RunConfig(
        algo="trpo", env="Pendulum-v1", backend="jax", num_envs=2, num_steps=8,
        total_steps=64, eval_every=16, eval_episodes=1, seed=0, num_seeds=2,
        hyperparameters={"hidden_sizes": (8,)},
    )  # fmt: skip
    loop = make_loop(config, config.make_agent())
    recorder = ListRecorder(num_periods=4)
    assert isinstance(recorder, Recorder)

    carry = run_periods(loop, [recorder], loop.init(), 0, 0, 1, stop_after_periods=3)
    # 3 periods of 16 env steps per seed, each one collection of 2 envs x 8 steps.
    assert recorder.calls == [
        ("evals", 0, 0, (2,)),
        ("period", 1, 16, 1), ("updates", (2, 1)),
        ("period", 2, 32, 2), ("updates", (2, 1)), ("save", 2),
        ("period", 3, 48, 3), ("updates", (2, 1)),
    ]  # fmt: skip

    # On from where it stopped (3 collections done) to the end and the final evaluation.
    recorder.calls.clear()
    run_periods(loop, [recorder], carry, 48, 3, eval_episodes=1)
    assert recorder.calls == [
        ("period", 4, 64, 4), ("updates", (2, 1)), ("save", 4),
        ("finish", 1, (2,), (2,)),
    ]  # fmt: skip


def test_loops_of_the_same_programs_share_them_compiled():
    """A second loop of the same agent structure, environment and driver settings (a sweep's
    next group, a tuning study's next batch) reuses the compiled programs, with the same
    numbers; another structure compiles its own."""
    from jaxrl.training import programs

    programs._PROGRAMS.clear()

    def period(hidden_sizes: tuple[int, ...], lr: float) -> tuple[Any, dict[str, np.ndarray]]:
        config = RunConfig(
            algo="trpo", env="Pendulum-v1", backend="jax", num_envs=2, num_steps=8,
            total_steps=32, eval_every=16, eval_episodes=1, seed=0, num_seeds=2,
            hyperparameters={"hidden_sizes": hidden_sizes, "lr": lr},
        )  # fmt: skip
        loop = make_loop(config, config.make_agent())
        _, metrics = loop.run_period(loop.init(), 1)
        return loop.compile_seconds, metrics

    first, metrics = period((8,), 1e-3)
    again, same = period((8,), 1e-3)
    other_leaves, _ = period((8,), 3e-3)
    other_structure, _ = period((4,), 1e-3)
    assert first > 0 and again == 0 and other_leaves == 0 and other_structure > 0
    for name in metrics:
        np.testing.assert_array_equal(metrics[name], same[name], err_msg=name)
