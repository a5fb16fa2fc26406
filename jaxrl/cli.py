"""``jaxrl`` console command: train an agent on a JAX environment and report results.

jaxrl train trpo --env Pendulum-v1 --num-seeds 4 --total-steps 100000
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import jax
import numpy as np

from jaxrl.algorithms import NPG, TRPO
from jaxrl.training import TrainConfig, make_train

# Tianshou's tuned Pendulum-v1 test settings (test/continuous/test_{npg,trpo}.py).
DEFAULTS: dict[str, dict[str, Any]] = {
    "npg": dict(
        gamma=0.95,
        lr=1e-3,
        return_scaling=True,
        repeat=2,
        trust_region_size=0.5,
        deterministic_eval=True,
    ),
    "trpo": dict(gamma=0.95, lr=1e-3, return_scaling=True, repeat=2, max_kl=0.005),
}
ALGORITHMS = {"npg": NPG, "trpo": TRPO}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, no usage dump, exit 2
        sys.stderr.write(f"jaxrl: error: {message}\n")
        raise SystemExit(2)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="jaxrl", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    train = commands.add_parser("train", help="train an agent")
    train.add_argument("algo", choices=sorted(ALGORITHMS))
    train.add_argument("--env", default="Pendulum-v1", help="gymnax environment id")
    train.add_argument("--num-seeds", type=int, default=4)
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--total-steps", type=int, default=100_000)
    train.add_argument("--eval-every", type=int, default=20_480)
    train.add_argument("--num-envs", type=int, default=16)
    train.add_argument("--num-steps", type=int, default=128)
    return parser


def train_command(args: argparse.Namespace) -> int:
    agent = ALGORITHMS[args.algo](**DEFAULTS[args.algo])
    config = TrainConfig(
        num_envs=args.num_envs,
        num_steps=args.num_steps,
        total_steps=args.total_steps,
        eval_every=args.eval_every,
    )
    if args.num_seeds < 1:
        raise ValueError(f"--num-seeds must be >= 1, got {args.num_seeds}")
    start = time.perf_counter()

    def progress(info: dict) -> None:
        print(
            f"  [{time.perf_counter() - start:6.1f}s] env steps {info['env_steps']:>9,d}  "
            f"eval return {info['eval_return']:9.1f}",
            flush=True,
        )

    train = jax.jit(jax.vmap(make_train(agent, args.env, config, progress=progress)))
    keys = jax.random.split(jax.random.key(args.seed), args.num_seeds)
    print(
        f"Training {args.algo.upper()} on {args.env}: {args.num_seeds} seed(s) in one program, "
        f"{config.num_evals * config.updates_per_eval * config.steps_per_update:,d} env steps "
        "each (compiling first)...",
        flush=True,
    )
    _, metrics = train(keys)
    returns = np.asarray(jax.device_get(metrics["eval/return"]))
    elapsed = time.perf_counter() - start
    print(f"\nDone in {elapsed:.1f}s. Evaluation return per seed (last / best):")
    for seed, row in enumerate(returns):
        print(f"  seed {args.seed + seed}: {row[-1]:9.1f} / {row.max():9.1f}")
    print(f"Mean over seeds: last {returns[:, -1].mean():.1f}, best {returns.max(1).mean():.1f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return train_command(args)
    except (ValueError, TypeError) as error:
        sys.stderr.write(f"jaxrl: error: {error}\n")
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
