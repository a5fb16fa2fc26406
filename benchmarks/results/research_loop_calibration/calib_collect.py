"""Calibration of tests/training/test_collect.py's research loop (its docstring
says what the bars rest on).

    python benchmarks/results/research_loop_calibration/calib_collect.py 40 100 164

runs ``pendulum_research_loop`` for seeds 100-163 with 40 updates and writes each seed's
first and last returns (and curves) to ``calib_<updates>_<first>_<last>.json`` here.
"""

import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "tests" / "training"), str(ROOT / "tests")]
from test_collect import pendulum_research_loop  # noqa: E402


def main() -> None:
    n_updates = int(sys.argv[1])
    seeds = tuple(range(int(sys.argv[2]), int(sys.argv[3])))
    start = time.time()
    returns = pendulum_research_loop(seeds, n_updates)
    first, last = returns[:, 1], returns[:, -5:].mean(axis=1)
    out = {
        "n_updates": n_updates,
        "seeds": list(seeds),
        "first": first.tolist(),
        "last5": last.tolist(),
        "curves": returns.tolist(),
        "seconds": time.time() - start,
    }
    path = Path(__file__).with_name(f"calib_{n_updates}_{seeds[0]}_{seeds[-1]}.json")
    path.write_text(json.dumps(out))
    print(
        f"{n_updates} updates, {len(seeds)} seeds: last min {last.min():.1f}, 5th percentile "
        f"{np.percentile(last, 5):.1f}, median {np.median(last):.1f}; improvement min "
        f"{(last - first).min():.1f}; {time.time() - start:.0f} s"
    )


if __name__ == "__main__":
    main()
