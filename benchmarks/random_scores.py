"""The uniform random policy's return on each task of Tianshou's MuJoCo table: the zero of
``jaxrl compare --normalize tianshou`` (:mod:`jaxrl.runs.published`, ``RANDOM_RETURNS``).

Each task's gymnasium v5 environment, ``--episodes`` episodes (default 100) of actions drawn
uniformly from its action space (the space seeded with the episode's index, the environment
reset with it), the mean undiscounted return. Writes ``results/random_scores.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))

from jaxrl.runs.published import published_tasks  # noqa: E402


def random_return(env_id: str, episodes: int) -> tuple[float, float]:
    """Mean and std over ``episodes`` episodes of a uniform random policy on ``env_id``."""
    import gymnasium as gym

    env = gym.make(env_id)
    returns = []
    for episode in range(episodes):
        env.reset(seed=episode)
        env.action_space.seed(episode)
        total, done = 0.0, False
        while not done:
            _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    env.close()
    return float(np.mean(returns)), float(np.std(returns))


def main() -> None:
    episodes = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    results = {}
    for task in published_tasks():
        mean, std = random_return(f"{task}-v5", episodes)
        results[task] = {"mean": round(mean, 2), "std": round(std, 2), "episodes": episodes}
        print(f"{task}-v5: {mean:.2f} +- {std:.2f} ({episodes} episodes)", flush=True)
    out = BENCH_DIR / "results" / "random_scores.json"
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
