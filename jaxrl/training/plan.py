"""What a run will do, counted before it runs: the figures that predict its time on an
accelerator, where sequential steps, not arithmetic, set the pace.

:func:`run_plan` counts, per 1M env steps per seed, the vector steps taken one after another
in training and in evaluation, the physics passes of an env step and the solver's iteration
bounds (Brax environments), one update's sequential loops (:func:`update_loops`) and the
programs the jitted driver compiles. ``jaxrl train ... --plan`` prints it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from jaxrl.algorithms.protocol import Agent, evaluates_both_modes, update_loops
from jaxrl.config.settings import RunSettings

PER = 1_000_000  # the plan's unit: env steps per seed


@dataclasses.dataclass(frozen=True)
class RunPlan:
    """A run's counts (see the module docstring); ``*_steps`` are per 1M env steps per seed.

    Attributes:
      train_steps: vector steps of training, one after another (``1M / num_envs``).
      evaluations: evaluations per 1M env steps taking steps of their own (the initial one,
        one per period, the final policy's in each mode; with ``eval_alongside``, only the
        final policy's deterministic one).
      alongside: evaluations per 1M env steps stepped alongside training (``eval_alongside``:
        one per period), in no sequential step of their own but those an episode has left
        after a period shorter than it (``eval_steps`` counts them).
      horizon: vector steps of one evaluation (its episodes run in parallel to the time
        limit).
      eval_steps: ``evaluations * horizon`` and the steps left by short periods.
      frames: physics steps per env step (Brax: the task's frames; None: not a Brax task).
      passes: physics passes per env step, initial states drawn ahead included (Brax).
      solver_in_force: MJX's solver settings in force (empty: not MJX).
      updates: calls of ``update`` per 1M env steps.
      update_loops: one update's sequential loop bounds (:func:`update_loops`).
      programs: the programs the jitted driver compiles (empty for host runs).
    """

    train_steps: float
    evaluations: float
    alongside: float
    horizon: int
    eval_steps: float
    frames: int | None
    passes: float | None
    solver_in_force: dict[str, Any]
    updates: float
    update_loops: dict[str, int]
    programs: tuple[str, ...]

    @property
    def eval_share(self) -> float:
        """Evaluation's share of the sequential steps."""
        return self.eval_steps / (self.train_steps + self.eval_steps)

    def _left(self) -> str:
        left = self.eval_steps - self.evaluations * self.horizon
        return f" + {left:,.0f} left by periods shorter than an episode" if left > 0.5 else ""

    def lines(self) -> list[str]:
        """The plan as lines of text."""
        out = [
            f"Per {PER:,} env steps per seed:",
            f"  training    {self.train_steps:10,.0f} sequential vector steps",
            f"  evaluation  {self.eval_steps:10,.0f} sequential vector steps "
            f"({self.evaluations:.1f} evaluations x {self.horizon:,} steps"
            f"{self._left()}): {100 * self.eval_share:.1f}% of all",
            *(
                [f"  alongside   {self.alongside:10,.1f} evaluations stepped with training's steps"]
                if self.alongside
                else []
            ),
            f"  updates     {self.updates:10,.0f}",
        ]
        if self.passes is not None:
            out.append(
                f"  physics     {self.passes:.3g} passes per env step ({self.frames} frames"
                f"{', initial states drawn ahead' if self.passes != self.frames else ''})"
            )
        if self.solver_in_force:
            solver = ", ".join(f"{k} {v}" for k, v in self.solver_in_force.items())
            out.append(f"  solver      {solver} (a batch runs to its maximum)")
        for name, bound in self.update_loops.items():
            out.append(f"  per update  {name}: {bound:,}")
        if self.programs:
            out.append(f"  compiled    {len(self.programs)} programs: {', '.join(self.programs)}")
        return out


def run_plan(settings: RunSettings, agent: Agent, env: Any, horizon: int, updates: int) -> RunPlan:
    """The plan of a run of ``agent`` with ``settings`` on ``env`` (a JAX environment, or
    None for host environments), whose evaluation episodes last at most ``horizon`` steps
    and which calls ``update`` ``updates`` times."""
    layout = settings.layout
    scale = PER / layout.total_steps
    finals = 2 if evaluates_both_modes(agent) else 1
    evaluations = (1 + layout.num_periods + finals) * scale
    alongside, eval_steps = 0.0, evaluations * horizon
    if settings.eval_alongside:
        alongside, evaluations = layout.num_periods * scale, scale
        steps = [n * settings.num_steps for n in layout.period_collections]
        eval_steps = (horizon + sum(max(0, horizon - n) for n in steps)) * scale
    frames = getattr(env, "frames", None)
    passes = None if frames is None else frames + 1 / env.starts_every
    programs: tuple[str, ...] = ()
    if env is not None:
        lengths = sorted(set(layout.period_collections), reverse=True)
        periods = [f"period of {n} collection{'s' if n > 1 else ''}" for n in lengths]
        programs = ("init", *periods, "evaluation")
    return RunPlan(
        train_steps=PER / settings.num_envs,
        evaluations=evaluations,
        alongside=alongside,
        horizon=horizon,
        eval_steps=eval_steps,
        frames=frames,
        passes=passes,
        solver_in_force=dict(getattr(env, "solver_settings", {})),
        updates=updates * scale,
        update_loops=update_loops(agent, layout.steps_per_collect),
        programs=programs,
    )
