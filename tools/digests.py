"""SHA-256 digests of what a fixed set of small runs produce, to show that a change of the
code's form leaves every run's numbers as they were.

Each case trains in a fresh directory through the Python API (``jaxrl.runs``): TRPO, NPG and
DDPG on the jitted driver (gymnax Pendulum-v1) and on the host driver (gymnasium
Pendulum-v1), with and without observation normalization, TD3 (the plug-in
``examples/td3.py`` of the checkout that runs), a run stopped after one period and resumed,
and a sweep group of two settings. A case's digest covers its ``updates.csv`` and
``evals.csv`` (all but wall time), ``final_eval.json`` and every array of the final
checkpoint's agent state. Run it on two checkouts and compare the lines::

    python tools/digests.py > after.txt
    git worktree add /tmp/before OLD && PYTHONPATH=/tmp/before python tools/digests.py > before.txt
    diff before.txt after.txt

(``PYTHONPATH`` picks the checkout whose ``jaxrl`` runs; the cases use only the public API.)
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import sys
import tempfile
from pathlib import Path

import jax
import numpy as np

SMALL = {"num_envs": 4, "num_steps": 32, "total_steps": 512, "eval_every": 256}
CASES = {
    "trpo-jax": ("trpo", "Pendulum-v1", "jax", {}),
    "trpo-jax-obsnorm": ("trpo", "Pendulum-v1", "jax", {"normalize_obs": True}),
    "npg-jax": ("npg", "Pendulum-v1", "jax", {}),
    "ddpg-jax": ("ddpg", "Pendulum-v1", "jax", {"num_envs": 8, "num_steps": 1}),
    "ddpg-jax-obsnorm": (
        "ddpg",
        "Pendulum-v1",
        "jax",
        {"num_envs": 8, "num_steps": 1, "normalize_obs": True},
    ),
    # One environment: the replay buffer's single-column sampling.
    "ddpg-jax-one-env": (
        "ddpg",
        "Pendulum-v1",
        "jax",
        {"num_envs": 1, "num_steps": 1, "hyperparameters": {"update_per_step": 1.0}},
    ),
    "trpo-host": ("trpo", "Pendulum-v1", "gymnasium", {}),
    "trpo-host-obsnorm": ("trpo", "Pendulum-v1", "gymnasium", {"normalize_obs": True}),
    "npg-host": ("npg", "Pendulum-v1", "gymnasium", {}),
    "ddpg-host": ("ddpg", "Pendulum-v1", "gymnasium", {"num_envs": 8, "num_steps": 1}),
    # The plug-in of the checkout that runs (examples/td3.py): twin critics, a delayed actor.
    "td3-jax": ("td3", "Pendulum-v1", "jax", {"num_envs": 8, "num_steps": 1}),
}
HIDDEN = {"hidden_sizes": [16, 16]}
DDPG = {"warmup_steps": 64, "batch_size": 32, "buffer_size": 2048}


def _config(algo: str, env: str, backend: str, run: dict) -> object:
    from jaxrl.config import RunConfig

    run = dict(run)
    off_policy = DDPG if algo in ("ddpg", "td3") else {}
    hyper = {**HIDDEN, **off_policy, **run.pop("hyperparameters", {})}
    settings = {**SMALL, "num_seeds": 2, "eval_episodes": 2, **run}
    return RunConfig.from_preset(
        algo, env, "default", backend=backend, hyperparameters=hyper, **settings
    )


def _csv_rows(path: Path) -> list[list[str]]:
    with open(path) as handle:
        rows = list(csv.DictReader(handle))
    return [[f"{k}={v}" for k, v in row.items() if k != "wall_time"] for row in rows]


def digest(run_dir: Path) -> str:
    """The digest of a finished run directory (see the module docstring)."""
    from jaxrl.runs import load_run

    hasher = hashlib.sha256()
    for name in ("updates.csv", "evals.csv"):
        hasher.update(json.dumps(_csv_rows(run_dir / name)).encode())
    hasher.update((run_dir / "final_eval.json").read_bytes())
    state = load_run(run_dir).state
    for leaf in jax.tree_util.tree_leaves(state):
        if jax.dtypes.issubdtype(getattr(leaf, "dtype", None), jax.dtypes.prng_key):
            leaf = jax.random.key_data(leaf)
        hasher.update(np.asarray(leaf).tobytes())
    return hasher.hexdigest()


def run_cases(root: Path, only: list[str] | None) -> dict[str, str]:
    from jaxrl.runs import RunDir, train_run
    from jaxrl.studies import sweep

    found = {}
    for name, (algo, env, backend, run) in CASES.items():
        if only and name not in only:
            continue
        run_dir = RunDir.create(root / name)
        train_run(_config(algo, env, backend, run), run_dir, progress=False)
        found[name] = digest(run_dir.path)
    if not only or "trpo-jax-resumed" in only:
        config = _config("trpo", "Pendulum-v1", "jax", {"checkpoint_every": 1})
        run_dir = RunDir.create(root / "resumed")
        train_run(config, run_dir, stop_after_periods=1, progress=False)
        train_run(config, run_dir, resume=True, progress=False)
        found["trpo-jax-resumed"] = digest(run_dir.path)
    if not only or "trpo-jax-sweep" in only:
        base = _config("trpo", "Pendulum-v1", "jax", {})
        sweep(base, {"max_kl": [0.005, 0.02]}, root / "sweep")
        for setting in sorted((root / "sweep" / "runs").iterdir()):
            found[f"trpo-jax-sweep/{setting.name}"] = digest(setting)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="case names (default: all)")
    parser.add_argument(
        "--keep", type=Path, help="write the run directories here (to diff where digests differ)"
    )
    args = parser.parse_args()
    import jaxrl

    print(f"# jaxrl from {Path(jaxrl.__file__).parent}", file=sys.stderr)
    jaxrl.load_plugin(str(Path(jaxrl.__file__).parents[1] / "examples" / "td3.py"))
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) if args.keep is None else args.keep
        for name, value in run_cases(root, args.only).items():
            print(f"{name} {value}", flush=True)


if __name__ == "__main__":
    main()
