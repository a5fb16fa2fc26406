"""The hyperparameter search behind the ``pendulum`` preset: a grid of numeric hyperparameters
times seeds, all in one ``jax.jit(jax.vmap(jax.vmap(train)))`` on gymnax's Pendulum-v1, scored
by the *final* deterministic evaluation (10 episodes) of each seed.

Search seeds come from base seed 2000 (``jax.random.split(key(2000), S)``); the preset is then
checked on held-out seeds (base 1000) by ``pendulum_final_return.py``. Numeric fields (gamma,
gae_lambda, lr, max_kl, trust_region_size, damping) go in ``--grid``; structural ones in
``--set``.

    python benchmarks/pendulum_search.py --algo trpo --num-steps 256 --normalize-obs \\
        --set optim_critic_iters=20 log_std_init=-0.5 actor_output_scale=0.01 \\
              init_gain=1.4142135 return_scaling=true deterministic_eval=true \\
        --grid gamma=0.9,0.95 max_kl=0.01,0.02,0.04 --seeds 8 --total-steps 245760
"""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

import numpy as np
from common import base_parser, command_line, machine_info, output_dir, print_machine, write_json


def _value(text: str) -> Any:
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered == "none":
        return None
    try:
        return int(text)
    except ValueError:
        return float(text)


def search(
    algo: str,
    fixed: dict[str, Any],
    grid: dict[str, list[float]],
    *,
    num_envs: int,
    num_steps: int,
    total_steps: int,
    eval_every: int,
    normalize_obs: bool,
    seeds: int,
    base_seed: int,
) -> list[dict[str, Any]]:
    import jax
    import jax.numpy as jnp

    import jaxrl
    from jaxrl.training import TrainConfig, make_train

    cls = {"trpo": jaxrl.TRPO, "npg": jaxrl.NPG}[algo]
    names = sorted(grid)
    combos = list(itertools.product(*(grid[name] for name in names)))
    agents = [cls(**fixed, **dict(zip(names, combo, strict=True))) for combo in combos]
    stacked = jax.tree_util.tree_map(
        lambda *xs: jnp.stack([jnp.asarray(x, jnp.float32) for x in xs]), *agents
    )
    config = TrainConfig(
        num_envs, num_steps, total_steps, eval_every, 10, normalize_obs=normalize_obs
    )
    keys = jax.random.split(jax.random.key(base_seed), seeds)

    def one(agent: Any, key: jax.Array) -> jax.Array:
        return make_train(agent, "Pendulum-v1", config)(key)[1]["eval/return"]

    program = jax.jit(jax.vmap(jax.vmap(one, in_axes=(None, 0)), in_axes=(0, None)))
    returns = np.asarray(program(stacked, keys))  # [combos, seeds, evaluations]
    rows = []
    for combo, curves in zip(combos, returns, strict=True):
        final = curves[:, -1]
        rows.append(
            {
                **dict(zip(names, combo, strict=True)),
                "final_mean": float(final.mean()),
                "final_std": float(final.std()),
                "reached": int(np.sum(final >= -250)),
                "worst": float(final.min()),
                "curve": curves.mean(axis=0).round(1).tolist(),
            }
        )
    return rows


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--algo", choices=("trpo", "npg"), default="trpo")
    parser.add_argument("--set", nargs="*", default=[], help="field=value (fixed)")
    parser.add_argument("--grid", nargs="*", default=[], help="field=v1,v2,... (numeric leaves)")
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--num-steps", type=int, default=128)
    parser.add_argument("--total-steps", type=int, default=245_760)
    parser.add_argument("--eval-every", type=int, default=40_960)
    parser.add_argument("--normalize-obs", action="store_true")
    parser.add_argument("--seeds", type=int, default=16)
    parser.add_argument("--base-seed", type=int, default=2000)
    args = parser.parse_args()
    if args.quick:
        args.total_steps, args.eval_every, args.seeds = 4096, 2048, 2
    fixed = {k: _value(v) for k, v in (item.split("=", 1) for item in args.set)}
    grid = {
        k: [float(x) for x in v.split(",")] for k, v in (item.split("=", 1) for item in args.grid)
    }
    info = machine_info()
    print_machine(info)
    start = time.perf_counter()
    rows = search(
        args.algo,
        fixed,
        grid or {"gamma": [fixed.pop("gamma", 0.99)]},
        num_envs=args.num_envs,
        num_steps=args.num_steps,
        total_steps=args.total_steps,
        eval_every=args.eval_every,
        normalize_obs=args.normalize_obs,
        seeds=args.seeds,
        base_seed=args.base_seed,
    )
    seconds = time.perf_counter() - start
    for row in rows:
        print(json.dumps(row))
    print(f"{len(rows)} settings x {args.seeds} seeds in {seconds:.0f} s")
    write_json(
        output_dir(args) / f"pendulum_search_{args.algo}.json",
        {
            "machine": info,
            "command": command_line(),
            "fixed": fixed,
            "seconds": seconds,
            "rows": rows,
        },
    )


if __name__ == "__main__":
    main()
