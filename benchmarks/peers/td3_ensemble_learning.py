"""TD3's learning with its twin critics applied in turn (what a CPU runs) against one batched
network (what accelerators run), on the same seeds: the final returns of the peers harness's
TD3 run through jaxrl's API (gymnax Pendulum-v1, its matched settings).

    python benchmarks/peers/td3_ensemble_learning.py --seeds 32 --steps 10000 --seed 100

Prints one JSON line per form: mean, std, standard error and median of the seeds' final
returns, and each seed's.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import offpolicy_sides

import jaxrl.networks as networks


def final_returns(form: str, seeds: int, steps: int, seed: int) -> list[float]:
    """TD3's final returns with the ensemble's copies ``"in turn"`` or ``"batched"``."""
    original = networks.apply_copies
    if form == "batched":
        networks.apply_copies = lambda apply, stacked, *x, batched: original(
            apply, stacked, *x, batched=True
        )
    try:
        return offpolicy_sides.jaxrl_api_child("td3", seeds, steps, seed=seed)["returns"]
    finally:
        networks.apply_copies = original


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=32)
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=100, help="the first seed")
    args = parser.parse_args()
    for form in ("in turn", "batched"):
        returns = np.asarray(final_returns(form, args.seeds, args.steps, args.seed))
        summary = {
            "form": form,
            "mean": float(returns.mean()),
            "std": float(returns.std()),
            "se": float(returns.std() / np.sqrt(returns.size)),
            "median": float(np.median(returns)),
            "returns": returns.tolist(),
        }
        print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
