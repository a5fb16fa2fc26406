"""The words jaxrl reports results in: one name for each number, the same in the end-of-run
report (:mod:`jaxrl.runs.report`), ``evals.csv`` (:mod:`jaxrl.runs.metrics`), the learning-curve
figure (:mod:`jaxrl.runs.plots`), ``jaxrl evaluate`` and ``jaxrl compare``
(:mod:`jaxrl.studies.compare`); README.md's "Results vocabulary" says the same for users.

- **final policy**: the policy a finished run ends with, evaluated after training
  (``final_eval.json``): deterministically (the mode of the action distribution; DDPG's actor
  without noise) and, for NPG/TRPO, stochastically (actions sampled), ``eval_episodes``
  episodes per seed and mode. The verdict uses its deterministic return.
- **last evaluation**: the last evaluation during training (the last rows of ``evals.csv``,
  at the run's final env step; the policy acts as the algorithm evaluates, which may be
  stochastic). It is not the final policy's evaluation: other episodes, perhaps another mode.
- **best evaluation**: the evaluation during training with the best mean across seeds
  (Tianshou's statistic, which its published MuJoCo results report).
- **solved threshold**: the return a task counts as solved at
  (:func:`jaxrl.runs.report.solved_threshold`).
"""

from __future__ import annotations

FINAL_POLICY = "final policy"
LAST_EVALUATION = "last evaluation"
BEST_EVALUATION = "best evaluation"
SOLVED_THRESHOLD = "solved threshold"
DURING_TRAINING = "during training"
DETERMINISTIC = "deterministic"
STOCHASTIC = "stochastic"


def final_policy(mode: str) -> str:
    """The name of the final policy's evaluation in ``mode``: ``"final policy, deterministic"``."""
    return f"{FINAL_POLICY}, {mode}"
