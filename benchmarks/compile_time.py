"""Compile time of jaxrl's public programs, each in a fresh process with no compilation cache.

For every program: tracing and lowering to StableHLO (``jax.jit(f).lower(*args)``), XLA's
compilation (``.compile()``), and the size of what XLA received and produced (lines of the
StableHLO text and of the optimized HLO), which show where compile time goes.

What the optimized HLO is made of: its instructions, and how many of them generate random
numbers (op_name metadata through JAX's PRNG functions: Threefry hashing, sampling, key splits
and fold-ins), by the call site that asked for them (``attribute_random``); compile time grows
with the instruction count, so these say which program parts to make smaller.

Programs (Tianshou's Pendulum-v1 test settings, as in ``pendulum_wall_time.py``):
  trpo-update      ``jax.jit(TRPO.update)`` on one 16 x 128 rollout
  npg-update       the same for NPG
  ddpg-update      ``jax.jit(DDPG.update)`` on one batch of 128 transitions
  trpo-run-1       a whole TRPO run (245,760 env steps, 5 evaluations), one seed
  trpo-run-16      the same, 16 seeds under ``jax.vmap``
  npg-run-16       NPG, 16 seeds
  ddpg-run-16      DDPG (100,000 env steps), 16 seeds
  cli-trpo         what ``jaxrl train trpo --env Pendulum-v1`` compiles: the vmapped ``init``,
                   ``run_period`` and evaluation programs of the command's default run

Where a run's compile time goes (not in the default list): ``trpo-run-1`` with a part taken out,
each in its own process. The differences to ``trpo-run-1`` are the parts' shares.
  trpo-run-1-no-update    the agent's update replaced by a no-op (collection still traced)
  trpo-run-1-no-eval      the periodic evaluation replaced by a constant
  trpo-run-1-collect      neither: initialization and collection only
  trpo-init-1             the run's initialization alone (networks, optimizer, env resets)

    python benchmarks/compile_time.py                    # every program
    python benchmarks/compile_time.py --programs trpo-run-1 trpo-update
    python benchmarks/compile_time.py --quick            # CI: one TRPO update
    XLA_FLAGS=... python benchmarks/compile_time.py --programs trpo-run-1 --execute
                                                         # an XLA option's compile/run cost
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from common import (
    PENDULUM_EPOCH_STEPS,
    PENDULUM_EPOCHS,
    add_seed_axis,
    base_parser,
    child_record,
    command_line,
    import_distributions,
    loadavg,
    machine_info,
    markdown_table,
    output_dir,
    pendulum_agent,
    print_machine,
    write_csv,
    write_json,
)

PROGRAMS = (
    "trpo-update",
    "npg-update",
    "ddpg-update",
    "trpo-run-1",
    "trpo-run-16",
    "npg-run-16",
    "ddpg-run-16",
    "cli-trpo",
)
PARTS = ("trpo-run-1-no-update", "trpo-run-1-no-eval", "trpo-run-1-collect", "trpo-init-1")
QUICK_PROGRAMS = ("trpo-update",)
EXECUTE = False  # --execute: also run each compiled program (set in the child process)
SEED_AXIS = "auto"  # --seed-axis: how a program runs its seeds (jaxrl.training.over_seeds)


def _measure(name: str, fn: Any, *args: Any) -> dict[str, Any]:
    import jax

    import_distributions()
    start = time.perf_counter()
    lowered = jax.jit(fn).lower(*args)
    traced = time.perf_counter()
    compiled = lowered.compile()
    done = time.perf_counter()
    hlo = compiled.as_text()  # the optimized HLO, printed once for every count below
    row = {
        "program": name,
        "lower_s": traced - start,
        "compile_s": done - traced,
        "total_s": done - start,
        "stablehlo_lines": lowered.as_text().count("\n"),
        "optimized_hlo_lines": hlo.count("\n"),
        # Each fusion is a kernel XLA's CPU backend compiles (MLIR, then LLVM): the part of
        # the compile time that grows with the program. Counted, distinct and
        # by category, in one pass (distinct_kernels).
        **distinct_kernels(hlo),
        **attribute_random(hlo),
    }
    if EXECUTE:  # what a compile-time option costs at run time: two runs, the faster one
        runs = []
        for _ in range(2):
            begin = time.perf_counter()
            jax.block_until_ready(compiled(*args))
            runs.append(time.perf_counter() - begin)
        row["run_s"] = min(runs)
    return row


# JAX's PRNG functions as they appear in an instruction's op_name metadata.
RANDOM_MARKERS = ("threefry", "random_bits", "_uniform", "_normal", "_split", "fold_in")
# Path parts that name no call site: JAX's wrappers and control flow.
_GENERIC_PARTS = ("while", "body", "cond", "closed_call", "vmap()", "jvp()", "transpose(jvp())")
_INSTRUCTION = re.compile(r"\s+(ROOT )?%?[\w.\-]+ = ")
_OP_NAME = re.compile(r'op_name="([^"]*)"')


# A computation of optimized HLO text: its name, parameters, result type, body.
_COMPUTATION = re.compile(r"^%?([\w.\-]+) (\(.*?\)) -> (.*?) \{\n(.*?)^\}", re.M | re.S)
# A fusion instruction and the computation it calls; its result may be a tuple (a
# multi-output fusion, common on GPUs), so the type before "fusion(" may hold spaces.
_FUSION_CALL = re.compile(r" = .* fusion\(.*calls=%?([\w.\-]+)")
# What a kernel computes, by the op_name of its fusion instruction (the first rule that
# matches).
KERNEL_CATEGORIES = (
    ("random numbers", ("threefry", "_normal", "_uniform", "random_bits", "fold_in")),
    ("outputs written per loop step", ("dynamic_update_index_in_dim",)),
    ("environment", ("jit(reset)", "jit(step)", "reset_jax_envs", "step_env")),
    ("actor network", ("GaussianActor", "DeterministicActor")),
    ("critic network", ("ValueCritic", "QCritic")),
    ("trust region", ("KullbackLeibler", "conjugate", "line_search")),
)


def _canonical(params: str, result: str, body: str) -> str:
    """A fused computation with its names and metadata taken out: two kernels that compute
    the same thing on the same shapes have the same canonical text."""
    body = re.sub(r", metadata=\{[^}]*\}", "", body)
    body = re.sub(r"%[\w.\-]+", "%v", body)
    return re.sub(r"[\w.\-]+:", "p:", params) + result + body


def distinct_kernels(hlo: str) -> dict[str, Any]:
    """How many fused kernels an optimized HLO module has (every fusion instruction,
    multi-output ones included) and how many of them are distinct. XLA's CPU backend
    compiles a kernel once for all the fusions whose computation is the same (on a 2-core
    CPU, 60 identical kernels compile in 0.12 s, 60 that differ by a constant in 1.1 s), so
    compile time follows the distinct ones. Also each category's kernels and distinct
    kernels (:data:`KERNEL_CATEGORIES`, by the fusion's op_name; the rest "other")."""
    bodies = {name: _canonical(*rest) for name, *rest in _COMPUTATION.findall(hlo)}
    seen: set[str] = set()
    counts: dict[str, list[int]] = {}
    for line in hlo.splitlines():
        call = _FUSION_CALL.search(line)
        if not call or call.group(1) not in bodies:
            continue
        found = _OP_NAME.search(line)
        op_name = found.group(1) if found else ""
        category = next(
            (name for name, keys in KERNEL_CATEGORIES if any(k in op_name for k in keys)),
            "other",
        )
        body = bodies[call.group(1)]
        tally = counts.setdefault(category, [0, 0])
        tally[0] += 1
        if body not in seen:
            seen.add(body)
            tally[1] += 1
    return {
        "fused_kernels": sum(n for n, _ in counts.values()),
        "distinct_kernels": len(seen),
        "kernel_categories": {
            name: {"kernels": n, "distinct": d} for name, (n, d) in counts.items()
        },
    }


def attribute_random(hlo: str, top: int = 8) -> dict[str, Any]:
    """How much of an optimized HLO module generates random numbers: its instructions
    (fused computations' included) and those whose op_name runs through JAX's PRNG
    functions (Threefry hashing, uniform and normal sampling, key splits and fold-ins),
    counted by the call site that asked for them (the first two named parts of the path
    that are not PRNG functions, e.g. ``GaussianActor/Dense_0``, ``reset_jax_envs``;
    a PRNG call in no named scope or module is counted by how many loops (``while``: the
    seeds' map, the periods, the collection's scan...) it is inside)."""
    total, sites = 0, Counter()
    for line in hlo.splitlines():
        if not _INSTRUCTION.match(line):
            continue
        total += 1
        found = _OP_NAME.search(line)
        parts = found.group(1).split("/") if found else []
        if parts and parts[0] in parts[1:]:  # XLA joined two ops' names: keep the first
            parts = parts[: parts.index(parts[0], 1)]
        first = next(
            (i for i, part in enumerate(parts) if any(m in part for m in RANDOM_MARKERS)), None
        )
        if first is None:
            continue
        named = [
            part
            for part in parts[1:-1]  # the first is the program's name, the last a primitive
            if part not in _GENERIC_PARTS and not any(m in part for m in RANDOM_MARKERS)
        ]
        loops = parts[:first].count("while")
        sites["/".join(named[:2]) or f"(unnamed, {loops} loops deep)"] += 1
    random = sum(sites.values())
    return {
        "instructions": total,
        "random_instructions": random,
        "random_share": random / total if total else 0.0,
        "random_sites": dict(sites.most_common(top)),
    }


def _rollout(agent: Any, num_steps: int, num_envs: int) -> tuple[Any, Any]:
    import gymnax
    import jax
    import jax.numpy as jnp

    import jaxrl

    env, params = gymnax.make("Pendulum-v1")
    state = agent.init(jax.random.key(0), env.observation_space(params), env.action_space(params))
    shape = (num_steps, num_envs)
    obs = jnp.zeros((*shape, 3), jnp.float32)
    rollout = jaxrl.Rollout(
        obs=obs,
        action=jnp.zeros((*shape, 1), jnp.float32),
        reward=jnp.zeros(shape, jnp.float32),
        terminated=jnp.zeros(shape, bool),
        truncated=jnp.zeros(shape, bool),
        next_obs=obs,
    )
    return state, rollout


def _update_program(algo: str) -> dict[str, Any]:
    import jax

    agent = pendulum_agent(algo)
    if algo == "ddpg":
        import gymnax

        from jaxrl.replay import ReplayBuffer, Transition

        env, params = gymnax.make("Pendulum-v1")
        state = agent.init(
            jax.random.key(0), env.observation_space(params), env.action_space(params)
        )
        segment = Transition(*_rollout(pendulum_agent("trpo"), 256, 1)[1])  # [256, 1, ...]
        step = jax.tree_util.tree_map(lambda x: x[0], segment)
        buffer = ReplayBuffer.create(20_000, step).extend(segment)
        batch = agent.sample_batch(buffer, jax.random.key(1))
        return _measure(f"{algo}-update", agent.update, state, batch, jax.random.key(2))
    state, rollout = _rollout(agent, 128, 16)
    return _measure(f"{algo}-update", agent.update, state, rollout, jax.random.key(1))


def _without_learning(agent: Any) -> Any:
    """The same agent with ``update`` a no-op: what a run compiles besides learning."""
    import dataclasses

    class NoLearning(type(agent)):
        def update(self, state: Any, rollout: Any, key: Any) -> tuple[Any, dict]:
            return state, {}

    fields = {f.name: getattr(agent, f.name) for f in dataclasses.fields(agent)}
    return NoLearning(**fields)


def _run_program(
    name: str, algo: str, num_seeds: int, without: tuple[str, ...] = ()
) -> dict[str, Any]:
    """A whole run of ``num_seeds`` vmapped seeds, or (``without``) the run with parts taken
    out: ``"update"``, ``"eval"``, or ``"run"`` (initialization alone)."""
    import jax
    import jax.numpy as jnp

    import jaxrl.training.jax_driver as jax_driver
    from jaxrl.training import TrainConfig, make_train_loop, over_seeds

    agent = pendulum_agent(algo)
    steps = PENDULUM_EPOCH_STEPS[algo]
    if algo == "ddpg":
        config = TrainConfig(8, 1, PENDULUM_EPOCHS * steps, steps, 10)
    else:
        config = TrainConfig(16, 128, PENDULUM_EPOCHS * steps, steps, 10)
    if "update" in without:
        agent = _without_learning(agent)
    if "eval" in without:  # this child process only: the driver's evaluation, a constant
        jax_driver.evaluate = lambda *args, **kwargs: jnp.zeros(())
    loop = make_train_loop(agent, "Pendulum-v1", config)
    keys = jax.random.split(jax.random.key(0), num_seeds)
    if without == ("run",):
        return _measure(name, over_seeds(loop.init, SEED_AXIS, agent), keys)
    return _measure(name, over_seeds(loop.train, SEED_AXIS, agent), keys)


def cli_programs(concrete: bool = False) -> list[tuple[str, Any, tuple]]:
    """``(name, function, arguments)`` of each program ``jaxrl train trpo --env Pendulum-v1``
    compiles: the vmapped ``init`` and ``run_period``, and the initial and final evaluations,
    both modes (a traced flag: one program). The carry the last two take is ``init``'s shapes
    (enough to lower and compile them), or with ``concrete`` its value (``init`` run)."""
    import jax

    from jaxrl.config import RunConfig
    from jaxrl.runs import make_loop
    from jaxrl.training.evaluation import jax_evaluation_program

    config = RunConfig.from_preset("trpo", "Pendulum-v1", backend="jax")
    agent = config.make_agent()
    group = make_loop(config, agent)  # the programs `jaxrl train` runs
    keys, leaves = group.keys(), group.leaves
    if concrete:
        carry = group.init_program(leaves, keys)
    else:
        carry = jax.eval_shape(group.init_program, leaves, keys)
    period = group.period_program(group.layout.collections_per_period)
    agent_leaves, structure = jax.tree_util.tree_flatten(agent)
    evaluate = jax_evaluation_program(structure, *group.env, config.eval_episodes, None)
    flag = jax.numpy.asarray(True)
    evaluate_args = (agent_leaves, carry.state, carry.obs_stats, keys, flag)
    return [
        ("init", group.init_program, (leaves, keys)),
        ("run_period", period, (leaves, carry)),
        ("evaluate", evaluate.__wrapped__, evaluate_args),
    ]


def _cli_program() -> dict[str, Any]:
    parts = [_measure(name, fn, *args) for name, fn, args in cli_programs(concrete=EXECUTE)]
    total = {
        key: sum(part[key] for part in parts)
        for key in (
            "lower_s",
            "compile_s",
            "total_s",
            "stablehlo_lines",
            "optimized_hlo_lines",
            "fused_kernels",
            "distinct_kernels",
        )
    }
    categories: dict[str, dict[str, int]] = {}
    for part in parts:  # three programs, each compiling its own kernels
        for name, counts in part["kernel_categories"].items():
            merged = categories.setdefault(name, {"kernels": 0, "distinct": 0})
            for key in merged:
                merged[key] += counts[key]
    return {"program": "cli-trpo", **total, "kernel_categories": categories, "parts": parts}


def child(name: str) -> dict[str, Any]:
    import jax

    jax.config.update("jax_enable_compilation_cache", False)
    if name in ("trpo-update", "npg-update", "ddpg-update"):
        return _update_program(name.split("-")[0])
    if name == "cli-trpo":
        return _cli_program()
    if name == "trpo-init-1":
        return _run_program(name, "trpo", 1, ("run",))
    algo, _, seeds, *part = name.split("-")
    parts = {"no-update": ("update",), "no-eval": ("eval",), "collect": ("update", "eval")}
    return _run_program(name, algo, int(seeds), parts.get("-".join(part), ()))


def measure_in_fresh_process(
    name: str, execute: bool = False, seed_axis: str = "auto"
) -> dict[str, Any]:
    env = {**os.environ, "JAX_ENABLE_COMPILATION_CACHE": "false"}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    command = [sys.executable, __file__, "--child", name, "--seed-axis", seed_axis]
    command += ["--execute"] if execute else []
    row, seconds = child_record(command, name, env=env, cwd=Path(__file__).parent)
    return {**row, "process_s": seconds}


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--programs", nargs="+", choices=PROGRAMS + PARTS, default=None)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument(
        "--execute", action="store_true", help="also run each program (twice; the faster run)"
    )
    add_seed_axis(parser, "run programs take")
    args = parser.parse_args()
    if args.child:
        global EXECUTE, SEED_AXIS
        EXECUTE, SEED_AXIS = args.execute, args.seed_axis
        print(json.dumps(child(args.child)))
        return
    info = machine_info()
    print_machine(info)
    programs = args.programs or (QUICK_PROGRAMS if args.quick else PROGRAMS)
    rows = []
    for name in programs:
        before = loadavg()
        row = measure_in_fresh_process(name, args.execute, args.seed_axis)
        row["seed_axis"] = args.seed_axis
        row.update(loadavg_before=before, loadavg_after=loadavg())
        rows.append(row)
        print(
            f"{name}: lower {row['lower_s']:.2f} s + compile {row['compile_s']:.2f} s "
            f"= {row['total_s']:.2f} s (process {row['process_s']:.1f} s)"
            + (f", run {row['run_s']:.2f} s" if "run_s" in row else ""),
            flush=True,
        )
        for part in row.get("parts", []):
            print(f"    {part['program']}: {part['lower_s']:.2f} + {part['compile_s']:.2f} s")
        if "distinct_kernels" in row:
            parts = ", ".join(
                f"{name} {c['distinct']}/{c['kernels']}"
                for name, c in sorted(
                    row["kernel_categories"].items(), key=lambda item: -item[1]["distinct"]
                )
            )
            print(
                f"    kernels: {row['distinct_kernels']:,d} distinct of "
                f"{row['fused_kernels']:,d}; by what they compute (distinct/all): {parts}"
            )
        if "random_instructions" in row:
            sites = ", ".join(f"{site} {n}" for site, n in row["random_sites"].items())
            print(
                f"    random numbers: {row['random_instructions']:,d} of "
                f"{row['instructions']:,d} optimized HLO instructions "
                f"({100 * row['random_share']:.0f}%); by call site: {sites}"
            )
    table = markdown_table(
        [
            "program",
            "lower s",
            "XLA compile s",
            "total s",
            "StableHLO lines",
            "optimized HLO lines",
            "fused kernels",
            "distinct kernels",
        ],
        [
            [
                r["program"],
                f"{r['lower_s']:.2f}",
                f"{r['compile_s']:.2f}",
                f"{r['total_s']:.2f}",
                r["stablehlo_lines"],
                r["optimized_hlo_lines"],
                r.get("fused_kernels", ""),
                r.get("distinct_kernels", ""),
            ]
            for r in rows
        ],
    )
    print(table)
    out = output_dir(args)
    flat = [{k: v for k, v in r.items() if k != "parts"} for r in rows]
    write_csv(out / "compile_time.csv", flat)
    write_json(
        out / "compile_time.json", {"machine": info, "command": command_line(), "rows": rows}
    )


if __name__ == "__main__":
    main()
