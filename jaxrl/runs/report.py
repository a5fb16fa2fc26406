"""What a run ended with: the final policy's evaluations, the best evaluation during training,
and a verdict: against Tianshou's published 1M-step result for MuJoCo tasks
(:mod:`jaxrl.runs.published`), otherwise against the environment's solved threshold where one
is known.

The command prints :func:`report_lines` at the end of ``jaxrl train``; the same numbers are in
``RUN_DIR/final_eval.json`` (:class:`FinalEvaluation`) and ``evals.csv``
(:class:`CurveSummary`), which the learning-curve figure and ``jaxrl compare`` read, under
the same names (:mod:`jaxrl.runs.vocabulary`: final policy, last evaluation, best evaluation,
solved threshold).
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path

import numpy as np

from jaxrl.config.files import RUN_REMEDY, DamagedFile, read_json, write_text
from jaxrl.runs.metrics import learning_curve
from jaxrl.runs.published import tianshou_mujoco
from jaxrl.runs.vocabulary import (
    BEST_EVALUATION,
    DURING_TRAINING,
    FINAL_POLICY,
    LAST_EVALUATION,
    SOLVED_THRESHOLD,
)

# Thresholds the field uses where gymnasium's registry has none (``reward_threshold``).
KNOWN_THRESHOLDS: dict[str, tuple[float, str]] = {
    "Pendulum": (-250.0, "Tianshou's Pendulum bar"),
}


def solved_threshold(env_id: str) -> tuple[float, str] | None:
    """``(threshold, where it comes from)`` for ``env_id``, or None if none is known.

    Pendulum's -250 is the bar of Tianshou's tests; otherwise gymnasium's registered
    ``reward_threshold`` (CartPole-v1: 475, ...). Brax's tasks register none (and gymnasium
    would read ``brax:NAME`` as a module to import)."""
    if env_id.startswith("brax:"):
        return None
    base = env_id.rsplit("-v", 1)[0]
    if base in KNOWN_THRESHOLDS:
        return KNOWN_THRESHOLDS[base]
    try:
        import gymnasium as gym

        spec = gym.spec(env_id)
    except Exception:  # unknown to gymnasium (gymnax-only ids, typos): no threshold
        return None
    if spec.reward_threshold is None:
        return None
    return float(spec.reward_threshold), "gymnasium's reward_threshold"


@dataclasses.dataclass(frozen=True)
class FinalEvaluation:
    """Evaluations of a run's final policy (one mean return per seed).

    Attributes:
      episodes: episodes per seed and mode.
      env_steps: env steps per seed the policy was trained for.
      deterministic: ``[S]`` returns of the deterministic policy (the mode of the action
        distribution; DDPG's actor without noise).
      stochastic: ``[S]`` returns with actions sampled from the policy (NPG/TRPO), or None
        where the policy has no stochastic mode of its own (DDPG).
    """

    episodes: int
    env_steps: int
    deterministic: np.ndarray
    stochastic: np.ndarray | None

    def save(self, path: str | Path) -> None:
        data = {
            "episodes": self.episodes,
            "env_steps": self.env_steps,
            "deterministic": [float(r) for r in self.deterministic],
            "stochastic": None if self.stochastic is None else [float(r) for r in self.stochastic],
        }
        write_text(path, json.dumps(data, indent=2) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> FinalEvaluation | None:
        """The saved evaluation, or None where the run has none (unfinished, older runs).

        Raises:
          DamagedFile: the file is damaged (not JSON, or not a final evaluation).
        """
        if not Path(path).is_file():
            return None
        data = read_json(path, RUN_REMEDY, ("episodes", "env_steps", "deterministic"))
        stochastic = data.get("stochastic")
        try:
            return cls(
                episodes=int(data["episodes"]),
                env_steps=int(data["env_steps"]),
                deterministic=np.asarray(data["deterministic"], np.float64),
                stochastic=None if stochastic is None else np.asarray(stochastic, np.float64),
            )
        except (TypeError, ValueError) as error:
            raise DamagedFile(path, f"not a final evaluation: {error}", RUN_REMEDY) from None


@dataclasses.dataclass(frozen=True)
class CurveSummary:
    """A run's evaluations during training (from ``evals.csv``).

    Attributes:
      steps: ``[P]`` env steps of each evaluation (0: the initial policy).
      returns: ``[P, S]`` evaluation return of each seed (NaN where a seed has none).
    """

    steps: np.ndarray
    returns: np.ndarray

    @classmethod
    def load(cls, evals_csv: str | Path) -> CurveSummary:
        if not Path(evals_csv).is_file():
            return cls(np.zeros(0), np.zeros((0, 0)))
        steps, returns, _ = learning_curve(evals_csv)
        return cls(steps, returns)

    @property
    def num_seeds(self) -> int:
        return self.returns.shape[1]

    @property
    def means(self) -> np.ndarray:
        """``[P]`` mean across seeds (NaN where no seed has a value)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanmean(self.returns, axis=1)

    @property
    def best(self) -> int | None:
        """Index of the evaluation with the best mean (None without evaluations)."""
        means = self.means
        return None if not np.isfinite(means).any() else int(np.nanargmax(means))

    @property
    def last(self) -> int | None:
        return len(self.steps) - 1 if len(self.steps) else None


def mean_spread(values: np.ndarray) -> str:
    """``"-152.3 +- 10.1"`` (mean and standard deviation across seeds; the spread only for
    several seeds)."""
    values = np.asarray(values, np.float64)
    return f"{values.mean():.1f}" + (f" +- {values.std():.1f}" if values.size > 1 else "")


def _per_seed(values: np.ndarray) -> str:
    return ", ".join(f"{v:.1f}" for v in values)


def verdict(env_id: str, returns: np.ndarray) -> str | None:
    """One line: whether the mean of ``returns`` (the final policy's deterministic evaluation,
    one per seed) reaches ``env_id``'s solved threshold, and how many seeds do; None if no threshold
    is known."""
    known = solved_threshold(env_id)
    if known is None or not np.all(np.isfinite(returns)):
        return None
    threshold, source = known
    mean, reached = float(np.mean(returns)), int(np.sum(returns >= threshold))
    word = "Solved" if mean >= threshold else "Not solved"
    sign = ">=" if mean >= threshold else "<"
    return (
        f"{word}: {FINAL_POLICY}, deterministic {mean:.1f} {sign} {SOLVED_THRESHOLD} "
        f"{threshold:g} ({source}); {reached} of {len(returns)} "
        f"seed{'s' if len(returns) != 1 else ''} reach it."
    )


def against_tianshou(algo: str, env_id: str, curve: CurveSummary) -> str | None:
    """One line comparing the run's best evaluation (the evaluation during training with the
    best mean across seeds: Tianshou's statistic) with Tianshou's published 1M-step
    result for ``algo`` on ``env_id``'s MuJoCo task; None where Tianshou published none."""
    published = tianshou_mujoco(algo, env_id)
    best = curve.best
    if published is None or best is None:
        return None
    seeds = curve.returns[best][np.isfinite(curve.returns[best])]
    value, steps = float(np.mean(seeds)), int(curve.steps[best])
    low = published.mean - published.std
    where = (
        "at or above its mean"
        if value >= published.mean
        else ("within one std below its mean" if value >= low else "below its mean - 1 std")
    )
    return (
        f"Against Tianshou's {algo.upper()} on {published.task} ({published.env_steps:,} env "
        f"steps, {published.seeds} seeds, {BEST_EVALUATION}): {published}; this run's "
        f"{BEST_EVALUATION} {value:.1f} after {steps:,} env steps ({len(seeds)} seed"
        f"{'s' if len(seeds) != 1 else ''}) is {where}."
    )


def report_lines(
    env_id: str,
    final: FinalEvaluation | None,
    curve: CurveSummary,
    algo: str | None = None,
) -> list[str]:
    """The end-of-run report: the final policy's evaluations per mode with per-seed values,
    the best and the last evaluation during training, and the verdict: for ``algo`` on a
    MuJoCo task of Tianshou's table, the comparison with its published result
    (:func:`against_tianshou`); elsewhere the solved threshold (:func:`verdict`)."""
    lines = []
    if final is not None:
        lines.append(
            f"{FINAL_POLICY.capitalize()} (evaluated after training; {final.episodes} episodes "
            f"per seed, {final.env_steps:,} env steps):"
        )
        modes = [("deterministic", final.deterministic), ("stochastic", final.stochastic)]
        for name, values in modes:
            if values is not None:
                lines.append(
                    f"  {name:<13} {mean_spread(values):>18}   (per seed: {_per_seed(values)})"
                )
    best, last = curve.best, curve.last
    if best is not None and last is not None:
        best_seeds = curve.returns[best][np.isfinite(curve.returns[best])]
        last_seeds = curve.returns[last][np.isfinite(curve.returns[last])]
        for name, index, seeds in (
            (BEST_EVALUATION, best, best_seeds),
            (LAST_EVALUATION, last, last_seeds),
        ):
            lines.append(
                f"{name.capitalize()} {DURING_TRAINING}: {mean_spread(seeds)} after "
                f"{int(curve.steps[index]):,} env steps"
            )
    published = None if algo is None else against_tianshou(algo, env_id, curve)
    if published is not None:
        lines.append(published)
    elif final is not None:
        line = verdict(env_id, final.deterministic)
        if line is not None:
            lines.append(line)
    return lines
