"""The physics ceiling of a Brax task: raw vmapped physics steps and jaxrl's env step, per
solver setting, side by side.

For each solver setting (the task's own, and the accelerator setting ``newton`` with 1
iteration and 4 line-search iterations) and each batch size, three jitted programs of
``--num-envs`` environments, timed in alternating rounds:

- ``mjx.step``: one raw physics step of MuJoCo XLA, vmapped (float32), the ceiling;
- ``env step``: :meth:`jaxrl.envs.BraxEnv.step` (the task's frames of physics, the reward,
  auto-reset from initial states drawn ahead), what the training loop runs;
- ``step + reset``: the env step as it ran before initial states were drawn ahead (a reset
  computed for every environment at every step, selected where an episode ended).

Each figure is a median over ``--reps`` rounds of back-to-back calls (one call steps the
whole batch ``--inner`` times in a ``lax.scan``), as env steps (physics steps for the raw
row) per second over the whole batch.

    python benchmarks/physics.py --num-envs 256                 # the CPU comparison
    python benchmarks/physics.py --num-envs 4096 32768 --reps 5 # on a GPU
    python benchmarks/physics.py --quick                        # smoke run (inverted_pendulum)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from common import (
    alternate,
    base_parser,
    command_line,
    loadavg,
    machine_info,
    markdown_table,
    output_dir,
    print_machine,
    summarize,
    write_json,
)

SETTINGS = {"task": None, "accelerator": ("newton", 1, 4)}


def make_env(name: str, backend: str, solver: tuple | None) -> Any:
    from jaxrl.envs.brax_env import BraxEnv, Solver

    return BraxEnv(name, backend, solver=None if solver is None else Solver(*solver))


def programs(env: Any, num_envs: int, inner: int) -> dict[str, Callable[[], Any]]:
    """The three jitted programs of one environment and batch, each a closure that runs
    ``inner`` batch steps and blocks (compiled on first call)."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    keys = jax.random.split(jax.random.key(0), num_envs)
    _, states = jax.jit(jax.vmap(env.reset))(keys)
    actions = jnp.zeros((num_envs, env.action_size), jnp.float32)

    def scan(step: Callable) -> Callable:
        def run(carry: Any) -> Any:
            def body(carry: Any, t: jax.Array) -> tuple[Any, None]:
                return step(carry, jax.random.split(jax.random.fold_in(keys[0], t), num_envs)), None

            return lax.scan(body, carry, jnp.arange(inner))[0]

        return jax.jit(run)

    def env_step(states: Any, keys: jax.Array) -> Any:
        return jax.vmap(env.step)(keys, states, actions)[1]

    def step_and_reset(states: Any, keys: jax.Array) -> Any:
        def one(key: jax.Array, state: Any, action: jax.Array) -> Any:
            step_key, reset_key = jax.random.split(key)
            _, stepped, _, terminated, _ = env.step_env(step_key, state, action)
            done = terminated | env.is_truncated(stepped)
            start = env._start(reset_key)
            brax_state = jax.tree_util.tree_map(
                lambda r, s: jnp.where(done, r, s), start, stepped.brax_state
            )
            return stepped.replace(brax_state=brax_state, time=jnp.where(done, 0, stepped.time))

        return jax.vmap(one)(keys, states, actions)

    out: dict[str, Callable[[], Any]] = {}
    if env.backend == "mjx":
        from mujoco import mjx

        model = env.env.sys
        data = jax.vmap(lambda s: s.brax_state.pipeline_state)(states)

        def raw(data: Any, keys: jax.Array) -> Any:
            del keys
            return jax.vmap(mjx.step, in_axes=(None, 0))(model, data)

        out["mjx.step"] = _closure(scan(raw), data)
    out["env step"] = _closure(scan(env_step), states)
    out["step + reset"] = _closure(scan(step_and_reset), states)
    return out


def _closure(program: Callable, carry: Any) -> Callable[[], Any]:
    import jax

    state = {"carry": carry}

    def call() -> None:
        state["carry"] = jax.block_until_ready(program(state["carry"]))

    return call


def measure(
    name: str, backend: str, num_envs: int, settings: list[str], reps: int, inner: int
) -> list[dict[str, Any]]:
    """One row per program and solver setting at ``num_envs``: compile seconds and the
    median rate."""
    contestants, compile_s, frames = {}, {}, {}
    for setting in settings:
        env = make_env(name, backend, SETTINGS[setting])
        for program, call in programs(env, num_envs, inner).items():
            label = f"{setting}: {program}"
            start = time.perf_counter()
            call()  # compiles
            compile_s[label] = time.perf_counter() - start
            contestants[label] = call
            frames[label] = (env.frames, env.solver_settings)
    samples = alternate(contestants, reps, dict.fromkeys(contestants, 1))
    rows = []
    for label, seconds in samples.items():
        setting, program = label.split(": ")
        stats = summarize(seconds)
        frames_per_step, solver = frames[label]
        rows.append(
            {
                "env": name,
                "backend": backend,
                "num_envs": num_envs,
                "setting": setting,
                "solver": solver,
                "program": program,
                "frames_per_env_step": frames_per_step,
                "compile_s": compile_s[label],
                "seconds_per_batch_step": stats["median"] / inner,
                "seconds_q1_q3": [stats["q1"] / inner, stats["q3"] / inner],
                "steps_per_s": num_envs * inner / stats["median"],
                "physics_steps_per_s": num_envs
                * inner
                * (1 if program == "mjx.step" else frames_per_step)
                / stats["median"],
            }
        )
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table, and each setting's env step against the task's."""
    base = {
        (r["num_envs"], r["program"]): r["seconds_per_batch_step"]
        for r in rows
        if r["setting"] == "task"
    }
    return markdown_table(
        ["envs", "solver", "program", "compile s", "ms / batch step", "steps/s", "vs task"],
        [
            [
                f"{r['num_envs']:,}",
                r["setting"] + (f" {r['solver']}" if r["solver"] else ""),
                r["program"],
                f"{r['compile_s']:.1f}",
                f"{1e3 * r['seconds_per_batch_step']:.2f}",
                f"{r['steps_per_s']:,.0f}",
                f"{base[(r['num_envs'], r['program'])] / r['seconds_per_batch_step']:.2f}x"
                if (r["num_envs"], r["program"]) in base
                else "",
            ]
            for r in rows
        ],
    )


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--env", default="hopper")
    parser.add_argument("--backend", default="mjx")
    parser.add_argument("--num-envs", type=int, nargs="+", default=[256])
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=SETTINGS)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--inner", type=int, default=10, help="batch steps per timed call")
    args = parser.parse_args()
    if args.quick:
        args.env, args.backend, args.num_envs, args.settings = (
            args.env if args.env != "hopper" else "inverted_pendulum",
            "positional",
            [8],
            ["task"],
        )
        args.reps, args.inner = 2, 4
    info = machine_info()
    print_machine(info)
    load_before = loadavg()
    rows = []
    for num_envs in args.num_envs:
        rows += measure(args.env, args.backend, num_envs, args.settings, args.reps, args.inner)
        print(table(rows), flush=True)
    out = output_dir(args) / f"physics_{args.env}_{args.backend}.json"
    write_json(
        out,
        {
            "command": command_line(),
            "machine": info,
            "load_before": load_before,
            "load_after": loadavg(),
            "rows": rows,
        },
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
