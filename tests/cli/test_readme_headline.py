"""The README's headline: ``jaxrl train trpo --env Pendulum-v1`` (the ``pendulum`` preset: 4
seeds, 327,680 env steps each) ends with a solved Pendulum, judged on the final policy.

Measured on a 2-core CPU with this code (final deterministic return, 10 episodes per seed):
the command as given (``--seed 0``): -185.1 +- 43.5, 4 of 4 seeds >= -250; ``--seed 1
--num-seeds 16`` (16 other seeds): -196.6 +- 45.5, 15 of 16 seeds >= -250 (worst -297.0). The
mean of 4 seeds has a spread of about 23 across seed sets, so -250 sits over two of those
below the measured means; an untrained policy scores about -1,250."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from jaxrl.io import read_csv

from .helpers import Result

SOLVED = -250.0  # Tianshou's Pendulum bar, the README's "Solved"


@pytest.mark.learning
@pytest.mark.slow
def test_the_readme_command_ends_with_a_solved_final_policy(
    jaxrl: Callable[..., Result], tmp_path: Path
):
    """The final policy's deterministic mean over the 4 seeds is >= -250 and at least 2 of the
    4 seeds reach -250 on their own (as the README's output shows; 15 of 16 held-out seeds
    do); the report says so, and the learning curve starts from an untrained policy."""
    run_dir = tmp_path / "readme"
    result = jaxrl("train", "trpo", "--env", "Pendulum-v1", "--run-dir", run_dir).check()
    config = json.loads((run_dir / "config.json").read_text())
    assert config["preset"] == "pendulum"
    assert (config["run"]["num_seeds"], config["run"]["total_steps"]) == (4, 327_680)

    final = json.loads((run_dir / "final_eval.json").read_text())
    assert (final["env_steps"], final["episodes"]) == (327_680, 10)
    returns = np.asarray(final["deterministic"])
    print(f"\nfinal deterministic return per seed: {returns} (mean {returns.mean():.1f})")
    assert returns.shape == (4,)
    assert returns.mean() >= SOLVED, returns
    assert np.sum(returns >= SOLVED) >= 2, returns

    # The report's verdict is the same figure.
    reached = int(np.sum(returns >= SOLVED))
    verdict = re.search(
        r"Solved: final policy, deterministic (-?[\d.]+) >= solved threshold -250", result.stdout
    )
    assert verdict is not None, result.stdout
    assert float(verdict.group(1)) == pytest.approx(returns.mean(), abs=0.06)
    assert f"{reached} of 4 seeds reach it" in result.stdout

    # It learned: the initial policy's evaluation is far below the bar.
    evals = read_csv(run_dir / "evals.csv")
    initial = evals["eval_return"][evals["env_steps"] == 0]
    assert initial.shape == (4,) and np.all(initial < -900), initial
