"""A run's settings and its counts, in one place.

:class:`RunSettings` declares the settings of a run (its shape, its evaluation, its seeds,
checkpointing, observation normalization and environment backends), validates them (one rule,
:meth:`RunSettings.validate`: an error names the field and what it expects) and derives every
count from them (:attr:`RunSettings.layout`, a :class:`RunLayout`); the fields' metadata
(:func:`setting`) are the command line's options and help.

The arithmetic (the same for the jitted and the host driver):

- A run is ``C = total_steps // (num_envs * num_steps)`` whole collections (each followed by
  learning): the budget rounded down to whole collections, so a run takes at most one
  collection less than ``total_steps``, never more.
- Where a budget is given without an interval, the interval adapts
  (:func:`evaluation_interval`): a short run evaluates at least about 10 times.
- It evaluates after every ``k = round(eval_every / (num_envs * num_steps))`` collections (at
  least 1, at most ``C``) and after the last collection: ``ceil(C / k)`` evaluation periods,
  all of ``k`` collections but the last, which holds the remaining ``C - (P - 1) k`` (a
  shorter period when ``k`` does not divide ``C``). Periods end at absolute collection counts
  (multiples of ``k``, and ``C``), so a run extended with a larger budget continues with the
  same period boundaries.
- Agent updates: one per collection for on-policy agents; ``update_per_step *
  num_envs * num_steps`` per collection for off-policy agents, for the collections that do not
  start inside the random warm-up (:meth:`RunLayout.agent_updates`). A learning-rate schedule
  is sized with this count, so it reaches its end on the run's last update.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal

import numpy as np

from jaxrl.core._checks import check_bool, check_int, integer_words

MIN_EVALUATIONS = 10
# Seeds a run trains when ``num_seeds`` is not given, by backend. 8 on JAX environments (one
# vmapped program): a verdict over 4 seeds flipped with a CPU's float rounding
# (docs/benchmarks/learning.md, "Pendulum: the main job").
DEFAULT_NUM_SEEDS: dict[str, int] = {"jax": 8, "gymnasium": 1}
_NO_DEFAULT: Any = object()
REQUIRED: Any = dataclasses.MISSING
"""The ``default`` of a :func:`setting` that has none (a required field)."""


def setting(
    default: Any,
    help: str | Callable[[str], str],
    *,
    minimum: int | None = None,
    preset: bool = False,
    driver: bool = False,
    cli: bool = True,
    cli_type: Any = None,
    cli_default: Any = _NO_DEFAULT,
    launch: bool = False,
) -> Any:
    """A run setting: a dataclass field whose metadata the command line reads.

    Args:
      default: the Python default (:data:`REQUIRED`: none).
      help: one line of help (a callable gets the name of the preset in force).
      minimum: for ints, the smallest value allowed (checked by :meth:`RunSettings.validate`).
      preset: the default comes from the preset in force (:mod:`jaxrl.config.presets`).
      driver: the drivers' programs depend on it (:attr:`RunSettings.driver_settings`).
      cli: offered as a command-line option (``--name-with-dashes``).
      cli_type: the command-line type where it differs from the field's (``int | None``
        where None asks the command to choose).
      cli_default: the command's default where it differs from ``default``.
      launch: how this process joins a job of several processes, not what the run is
        (:func:`launch_settings`): not saved in ``config.json``, and a resumed run takes it
        as given (it may be launched with another process layout).
    """
    metadata = dict(help=help, minimum=minimum, preset=preset, driver=driver, cli=cli)
    metadata |= dict(cli_type=cli_type, cli_default=cli_default, launch=launch)
    if default is REQUIRED:
        return dataclasses.field(metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


class SettingError(ValueError):
    """A run setting out of its range.

    Attributes:
      owner: the class (``"RunSettings"``, ``"RunConfig"``).
      field: the field's name.
      expected: what it must be; other fields it names are written ``{name}`` (see
        :meth:`describe`).
      value: the value given.
    """

    def __init__(self, owner: str, field: str, expected: str, value: Any) -> None:
        self.owner, self.field, self.expected, self.value = owner, field, expected, value
        super().__init__(f"{owner}.{self.describe()}")

    def describe(self, spell: Callable[[str], str] = str) -> str:
        """``"FIELD must be EXPECTED, got VALUE"`` with field names spelled by ``spell``
        (the command line passes its flag spelling)."""
        names = {f.name: spell(f.name) for f in dataclasses.fields(RunSettings)}
        expected = self.expected.format(**names)
        return f"{spell(self.field)} must be {expected}, got {self.value!r}"


def _passes(check: Callable[..., None], **options: Any) -> Callable[[Any], bool]:
    """Whether a value passes one of core's checks (``check_bool``, ``check_int``)."""

    def accepts(value: Any) -> bool:
        try:
            check("value", value, **options)
        except (TypeError, ValueError):
            return False
        return True

    return accepts


def _expected(hint: Any, minimum: int | None) -> tuple[Callable[[Any], bool], str]:
    """``(accepts, words)`` for a field's type hint: whether a value is allowed, and what
    an error says it must be."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        (inner,) = [a for a in args if a is not type(None)]
        accepts, words = _expected(inner, minimum)
        return (lambda v: v is None or accepts(v)), f"{words} or None"
    if origin is Literal:
        return (lambda v: v in args), "one of " + ", ".join(repr(a) for a in args)
    if hint is str:
        return (lambda v: isinstance(v, str)), "a string"
    if hint is bool:
        return _passes(check_bool), "True or False"
    if hint is int:
        return _passes(check_int, low=minimum), integer_words(minimum)
    raise TypeError(f"no rule for a run setting of type {hint!r}")


@dataclasses.dataclass(frozen=True)
class RunSettings:
    """The settings of a training run (all static: none is traced).

    The jitted driver (:func:`~jaxrl.training.jax_driver.make_train`) reads the shape, the
    evaluation, ``check_finite`` and ``normalize_obs``; the host driver
    (``jaxrl.training.gymnasium_driver``) those and the environment backend; the ``jaxrl``
    command and :mod:`jaxrl.runs` all of them.

    Attributes:
      num_envs: parallel training environments (per seed).
      num_steps: vector steps per collection, between learning phases (Tianshou's
        ``step_per_collect = num_envs * num_steps``; DDPG's test: 8 envs x 1 step).
      total_steps: env-step budget per seed: the run does ``total_steps // (num_envs *
        num_steps)`` whole collections (:attr:`layout`).
      eval_every: env steps between evaluations (rounded to whole collections); the run also
        evaluates after its last collection (a shorter last period where the interval does
        not divide the run).
      eval_episodes: evaluation episodes (run in parallel).
      eval_alongside: the jitted driver evaluates the policy each period starts with while
        the period trains: its ``eval_episodes`` episodes take one step with every vector
        step of training (a wider batch, no evaluation steps of their own), so the first
        period reports the initial policy and the final policy is evaluated after the last
        period (deterministically only). In a period shorter than an episode's horizon the
        episodes take the steps left after its training steps.
      check_finite: checked mode of the jitted driver: every env step verifies that
        observations and rewards are finite (``jax.experimental.checkify``); run the train
        function through :func:`jaxrl.training.checked_call`, which raises naming the field
        and the env step. The host driver always checks.
      normalize_obs: Tianshou's running observation normalization
        (:func:`jaxrl.core.normalize_observations`): statistics updated with every training
        observation, frozen for evaluation, carried (and checkpointed) with the run.
      seed: base seed; seed ``i`` of a run is ``key(seed + i)`` on both drivers
        (:func:`jaxrl.training.seeds.seed_keys`).
      num_seeds: seeds trained together (in one program on JAX environments).
      checkpoint_every: evaluation periods between checkpoints (0: only at the end).
      checkpoint_buffer: host runs: checkpoints hold the replay buffer too (exact resume of
        off-policy learning; a DDPG buffer of ``buffer_size`` transitions costs about
        ``buffer_size * (2 * obs_dim + act_dim + 3) * 4`` bytes per seed and checkpoint).
      env_backend: host environments: ``"gymnasium"``, ``"envpool"`` or ``"auto"`` (EnvPool
        for the ids it has when installed); unused by the jitted driver.
      brax_backend: Brax's physics backend for a ``brax:NAME`` environment (``generalized``,
        ``positional``, ``spring`` or ``mjx``); None for every other environment.
      solver: MJX's constraint solver (:class:`jaxrl.envs.Solver`); None keeps the task's.
      solver_iterations: MJX's solver iterations; None keeps the task's.
      solver_ls_iterations: MJX's line-search iterations; None keeps the task's.
      coordinator_address: a job of several processes: ``host:port`` of process 0, which
        coordinates the job (``jax.distributed.initialize``); None for a single process, or
        where a cluster manager launched the job (SLURM's ``srun``, Open MPI's ``mpirun``:
        JAX reads it from their environment). This and the next three are launch settings
        (:func:`launch_settings`), not saved with the run.
      num_processes: processes of the job (None: 1, or the cluster manager's count).
      process_id: this process' index in the job, ``0 .. num_processes - 1`` (None: the
        cluster manager's); process 0 writes the run directory.
      coordinator_timeout: seconds a process waits for every process of the job to join it;
        then it exits naming the coordinator.
    """

    num_envs: int = setting(
        16, "parallel training environments", minimum=1, preset=True, driver=True
    )
    num_steps: int = setting(
        128,
        "vector steps per collection (learning follows every num_envs x num_steps steps)",
        minimum=1,
        preset=True,
        driver=True,
    )
    total_steps: int = setting(
        250_000, "env-step budget per seed", minimum=1, preset=True, driver=True
    )
    eval_every: int = setting(
        50_000, "env steps between evaluations (one period)", minimum=1, preset=True, driver=True
    )
    eval_episodes: int = setting(10, "episodes per evaluation", minimum=1, preset=True, driver=True)
    eval_alongside: bool = setting(
        False,
        "JAX environments: evaluate the policy each period starts with alongside the period's "
        "training steps (no evaluation steps of its own; the accelerator preset's)",
        preset=True,
        driver=True,
    )
    check_finite: bool = setting(
        False, "check every env step's observations and rewards are finite", driver=True, cli=False
    )
    normalize_obs: bool = setting(
        False,
        "running observation normalization (Tianshou's MuJoCo setting; clipped to +-10)",
        preset=True,
        driver=True,
    )
    seed: int = setting(
        0, "base seed: the run trains seeds seed, seed + 1, ..., each key(seed + i)"
    )
    num_seeds: int = setting(
        1,
        f"seeds trained together in one program; None: {DEFAULT_NUM_SEEDS['jax']} on JAX "
        f"environments, {DEFAULT_NUM_SEEDS['gymnasium']} on host environments",
        minimum=1,
        cli_type=int | None,
        cli_default=None,
    )
    checkpoint_every: int = setting(
        0, "evaluation periods between checkpoints (0: only at the end)", minimum=0, cli_default=1
    )
    checkpoint_buffer: bool = setting(
        True, "host runs: checkpoints hold the replay buffer (exact off-policy resume; large)"
    )
    env_backend: Literal["auto", "gymnasium", "envpool"] = setting(
        "auto",
        "host environments: auto uses EnvPool for the ids it has when installed, "
        "gymnasium's vector env otherwise (naming one uses the host driver)",
    )
    brax_backend: Literal["generalized", "positional", "spring", "mjx"] | None = setting(
        None,
        "physics of brax:NAME environments: generalized (Brax's default; None picks it), "
        "positional, spring, or mjx (MuJoCo XLA, for GPUs)",
    )
    solver: Literal["cg", "newton"] | None = setting(None, "MJX's solver (None: the task's)")
    solver_iterations: int | None = setting(None, "MJX's solver iterations", minimum=1)
    solver_ls_iterations: int | None = setting(None, "MJX's line-search iterations", minimum=1)

    coordinator_address: str | None = setting(
        None,
        "several processes: host:port of process 0, which coordinates the job; None: one "
        "process, or the job a cluster manager (SLURM's srun, mpirun) launched",
        launch=True,
    )
    num_processes: int | None = setting(
        None,
        "several processes: processes in the job (None: 1, or the cluster manager's count)",
        minimum=1,
        launch=True,
    )
    process_id: int | None = setting(
        None,
        "several processes: this process' index, 0 to num_processes - 1 (process 0 writes the "
        "run directory; None: the cluster manager's)",
        minimum=0,
        launch=True,
    )
    coordinator_timeout: int = setting(
        300,
        "several processes: seconds to wait for every process to join the job",
        minimum=1,
        launch=True,
    )

    def __post_init__(self) -> None:
        self.validate({name: getattr(self, name) for name in _rules(type(self))})

    @classmethod
    def validate(cls, values: Mapping[str, Any]) -> None:
        """Check settings given by name (any subset of the class'
        :func:`~jaxrl.config.settings.setting` fields, a subclass' included): each against its
        type and minimum, and a budget against one collection.

        Raises:
          SettingError: for the first value out of range, naming the field and what it
            expects.
        """
        owner = cls.__name__
        for name, (accepts, words) in _rules(cls).items():
            if name in values and not accepts(values[name]):
                raise SettingError(owner, name, words, values[name])
        shape = ("num_envs", "num_steps", "total_steps")
        if all(name in values for name in shape):
            collection = values["num_envs"] * values["num_steps"]
            if values["total_steps"] < collection:
                size = f"{values['num_envs']} x {values['num_steps']} = {collection:,} env steps"
                expected = "at least one collection ({num_envs} x {num_steps} = " + size + ")"
                raise SettingError(owner, "total_steps", expected, values["total_steps"])
        process, processes = values.get("process_id"), values.get("num_processes")
        if process is not None and processes is not None and process >= processes:
            expected = f"less than {{num_processes}} ({processes}): processes are numbered from 0"
            raise SettingError(owner, "process_id", expected, process)

    @property
    def layout(self) -> RunLayout:
        """The run's collections, evaluation periods and updates (the counts every driver
        and the edge read)."""
        return RunLayout.of(self.num_envs, self.num_steps, self.total_steps, self.eval_every)

    @property
    def steps_per_collect(self) -> int:
        """Env steps per collection (``num_envs * num_steps``)."""
        return self.num_envs * self.num_steps

    @property
    def driver_settings(self) -> RunSettings:
        """The settings the drivers' programs depend on, the others at their defaults; equal
        for runs that can share compiled programs, whatever their seeds or checkpoints."""
        fields = settings_fields()
        return RunSettings(
            **{f.name: getattr(self, f.name) for f in fields if f.metadata["driver"]}
        )

    def describe(self) -> str:
        """One line: ``"976 collections of 16 x 64 env steps (999,424 env steps), ..."``."""
        return self.layout.describe(self.num_envs, self.num_steps)

    @classmethod
    def for_budget(cls, defaults: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
        """The settings ``given`` over ``defaults`` (a preset's), with the evaluation
        interval adapted to a budget given without one
        (:func:`~jaxrl.config.settings.evaluation_interval`)."""
        values = {**defaults, **given}
        if "total_steps" in given and "eval_every" not in given:
            values["eval_every"] = evaluation_interval(
                values["total_steps"],
                values["num_envs"] * values["num_steps"],
                defaults["total_steps"],
                defaults["eval_every"],
            )
        return values


def settings_fields() -> tuple[dataclasses.Field, ...]:
    """The fields of :class:`RunSettings` (the run settings), in declaration order."""
    return dataclasses.fields(RunSettings)


def launch_settings() -> tuple[str, ...]:
    """Names of the launch settings (:func:`setting`'s ``launch``): how a process joins a job
    of several processes, not what the run is; ``config.json`` leaves them out."""
    return tuple(f.name for f in settings_fields() if f.metadata["launch"])


@functools.cache
def _rules(cls: type) -> dict[str, tuple[Callable[[Any], bool], str]]:
    """``name -> (accepts, words)`` of each :func:`setting` field of ``cls``."""
    hints = typing.get_type_hints(cls)
    return {
        f.name: _expected(hints[f.name], f.metadata["minimum"])
        for f in dataclasses.fields(cls)
        if "minimum" in f.metadata
    }


def evaluation_interval(
    total_steps: int, steps_per_collect: int, default_total: int, default_eval_every: int
) -> int:
    """The evaluation interval of a budget ``total_steps`` whose settings default to
    ``default_eval_every`` for a budget of ``default_total``: that interval, shortened for a
    smaller budget so the run evaluates at least as often as the default run does, up to
    ``MIN_EVALUATIONS`` times (at most after every collection). A short run so keeps a
    learning curve; a given ``eval_every`` is taken as it is."""
    wanted = min(MIN_EVALUATIONS, max(1, default_total // default_eval_every))
    return max(steps_per_collect, min(default_eval_every, total_steps // wanted))


@dataclasses.dataclass(frozen=True)
class RunLayout:
    """The counts of a run in collections and evaluation periods (per seed), derived from its
    settings (:attr:`RunSettings.layout`; the rule is this module's docstring).

    Attributes:
      steps_per_collect: env steps per collection (``num_envs * num_steps``).
      collections_per_period: collections (each followed by learning) between evaluations:
        the length of every period but perhaps the last.
      num_collections: collections of the whole run.
    """

    steps_per_collect: int
    collections_per_period: int
    num_collections: int

    @classmethod
    def of(cls, num_envs: int, num_steps: int, total_steps: int, eval_every: int) -> RunLayout:
        """The layout of a request (see the module docstring for the rule).

        Raises:
          SettingError: naming the field, for a value that is not a positive integer, or a
            budget shorter than one collection (:meth:`RunSettings.validate`).
        """
        shape = dict(num_envs=num_envs, num_steps=num_steps, total_steps=total_steps)
        RunSettings.validate({**shape, "eval_every": eval_every})
        steps_per_collect = num_envs * num_steps
        collections = total_steps // steps_per_collect
        per_period = min(collections, max(1, round(eval_every / steps_per_collect)))
        return cls(steps_per_collect, per_period, collections)

    @property
    def steps_per_period(self) -> int:
        """Env steps of a whole evaluation period (per seed); the last may be shorter."""
        return self.steps_per_collect * self.collections_per_period

    @property
    def num_periods(self) -> int:
        """Evaluation periods of the run (one evaluation after each)."""
        return math.ceil(self.num_collections / self.collections_per_period)

    @property
    def period_collections(self) -> tuple[int, ...]:
        """Collections of each period, ``[P]``: ``k`` each, the last perhaps fewer."""
        return self.periods_after(0)

    def periods_after(self, done: int) -> tuple[int, ...]:
        """Collections of each period still to run after ``done`` collections (a resumed
        run; a run extended after a shorter last period first completes that period)."""
        periods = []
        while done < self.num_collections:
            periods.append(self.collections_in(done))
            done += periods[-1]
        return tuple(periods)

    def collections_in(self, done: int) -> int:
        """Collections of the period that starts after ``done`` collections: up to the next
        multiple of ``collections_per_period``, or to the end of the run."""
        k = self.collections_per_period
        return min(k - done % k, self.num_collections - done)

    @property
    def total_steps(self) -> int:
        """The env steps the run takes per seed, its whole collections."""
        return self.steps_per_collect * self.num_collections

    @property
    def eval_steps(self) -> tuple[int, ...]:
        """Env steps (per seed) after which the run evaluates, ``[P]``."""
        ends = np.cumsum(self.period_collections) * self.steps_per_collect
        return tuple(int(e) for e in ends)

    def agent_updates(self, update_per_step: float | None = None, warmup_steps: int = 0) -> int:
        """Calls of ``agent.update`` over the run: one per collection (on-policy, with
        ``update_per_step`` None); off-policy, ``update_per_step * num_envs * num_steps`` per
        collection that starts at or after ``warmup_steps`` env steps (the updates of a
        collection that starts inside the warm-up do not take effect)."""
        if update_per_step is None:
            return self.num_collections
        per_collect = round(update_per_step * self.steps_per_collect)
        starts = np.arange(self.num_collections) * self.steps_per_collect
        return int(per_collect * np.sum(starts >= warmup_steps))

    def describe(self, num_envs: int, num_steps: int) -> str:
        """One line: ``"61 evaluations, every 16 collections of 16 x 64 env steps; ..."``."""
        short, every = self.period_collections[-1], self.collections_per_period
        periods = self.num_periods
        last = f"; the last period {short} collection{_s(short)}" if short != every else ""
        count = self.num_collections
        return (
            f"{count:,} collection{_s(count)} of {num_envs} x {num_steps} env steps "
            f"({self.total_steps:,} env steps), {periods} evaluation{_s(periods)} every {every} "
            f"collection{_s(every)}{last}"
        )


def _s(count: int) -> str:
    """The plural ending of a count's noun."""
    return "s" if count != 1 else ""
