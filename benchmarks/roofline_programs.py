"""The jitted programs the roofline measures, by name: the algorithms' own code at the presets'
shapes (``roofline.py`` lists them), built lazily so that inputs are made only for what runs.
"""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from roofline_hlo import CG_LOOP, LINE_SEARCH_LOOP
from update_latency import as_batch, spaces, synthetic


@dataclasses.dataclass
class Program:
    """One jitted program to measure: ``fn(*args)``; ``trips(outputs)`` gives the trip
    counts of its data-dependent loops from what the call returned."""

    name: str
    group: str
    algo: str
    shape: str
    notes: str
    fn: Callable[..., Any]
    args: tuple
    trips: Callable[[Any], dict[str, float]] | None = None
    num_seeds: int = 1


SHAPE_PRESETS = {
    # shape name: (preset, observation dim, action dim, action bound)
    "pendulum": ("tianshou-pendulum", 3, 1, 2.0),
    "pendulum-preset": ("pendulum", 3, 1, 2.0),
    "mujoco": ("mujoco", 17, 6, 1.0),
}


def agent_for(algo: str, shape: str, **overrides: Any) -> tuple[Any, Any]:
    """The preset's agent and run settings (jaxrl's own preset machinery)."""
    from jaxrl.config.run_config import RunConfig

    preset = SHAPE_PRESETS[shape][0]
    config = RunConfig.from_preset(algo, "Pendulum-v1", preset, hyperparameters=overrides)
    return config.make_agent(), config


def shape_spaces(shape: str) -> tuple[Any, Any]:
    _, obs_dim, act_dim, high = SHAPE_PRESETS[shape]
    return spaces({"obs_dim": obs_dim, "act_dim": act_dim, "action_high": high})


def on_policy_inputs(algo: str, shape: str) -> tuple[Any, Any, Any, Any]:
    """``(agent, state, rollout, config)``: the preset's agent, its initial state and a
    synthetic rollout of the preset's shape (episodes truncate every 200 steps)."""
    from jaxrl.rollout import Rollout

    agent, config = agent_for(algo, shape)
    obs_space, act_space = shape_spaces(shape)
    state = agent.init(jax.random.key(0), obs_space, act_space)
    data = synthetic(config.num_steps, config.num_envs, obs_space.shape[0], act_space.shape[0], 0)
    rollout = as_batch(Rollout, data)
    return agent, state, rollout, config


def actor_steps_per_update(agent: Any, total: int) -> int:
    from jaxrl.algorithms.on_policy import minibatch_layout

    return agent.repeat * minibatch_layout(total, agent.batch_size)[0].shape[0]


def line_search_trips(
    backtracks: float, failures: float, steps: float, max_backtracks: int
) -> float:
    """Mean candidates tried per line search: ``index + 1`` when one is accepted,
    ``max_backtracks`` when none is."""
    return (backtracks + (steps - failures) + failures * max_backtracks) / steps


def update_trips(agent: Any, steps: int) -> Callable[[Any], dict[str, float]]:
    def trips(out: Any) -> dict[str, float]:
        _, stats = out
        result = {CG_LOOP: float(stats["cg_iterations"].mean)}
        if "backtracks" in stats:
            result[LINE_SEARCH_LOOP] = line_search_trips(
                float(stats["backtracks"]),
                float(stats["line_search_failures"]),
                steps,
                agent.max_backtracks,
            )
        return result

    return trips


def update_programs(algo: str, shape: str) -> list[Program]:
    agent, state, rollout, config = on_policy_inputs(algo, shape)
    total = config.num_envs * config.num_steps
    steps = actor_steps_per_update(agent, total)
    notes = (
        f"jit({type(agent).__name__}.update); {SHAPE_PRESETS[shape][0]} preset: "
        f"{config.num_envs} x {config.num_steps} = {total} samples, repeat {agent.repeat}, "
        f"{agent.optim_critic_iters} critic steps, hidden {list(agent.hidden_sizes)}"
    )
    return [
        Program(
            f"{algo}-update-{shape}",
            "update",
            algo,
            shape,
            notes,
            agent.update,
            (state, rollout, jax.random.key(1)),
            update_trips(agent, steps),
        )
    ]


def trpo_part_programs(shape: str) -> list[Program]:
    """TRPO's parts at one shape, from the inputs of the update's first actor step."""
    from jaxrl.algorithms import natural_step, on_policy
    from jaxrl.algorithms.natural_step import CG_RESIDUAL_TOL, TRUST_REGION_PRECISION, ActorStep
    from jaxrl.algorithms.on_policy import weighted_mean
    from jaxrl.core import distributions
    from jaxrl.core.trust_region import conjugate_gradient, make_gauss_newton_vector_product

    agent, state, rollout, _ = on_policy_inputs("trpo", shape)
    rule = agent.actor_rule()
    batch, _ = jax.jit(agent.prepare_batch)(state, rollout)
    weights = jnp.ones(batch.advantage.shape, jnp.float32)
    actor_apply = state.actor.apply_fn
    params = state.actor.params
    total = batch.advantage.shape[0]

    def policy(p: Any) -> Any:
        return actor_apply(p, batch.obs)

    def surrogate_at(dist: Any) -> jax.Array:
        return rule.surrogate(distributions.log_prob(dist, batch.action), batch, weights)

    def fvp_of(linearized: Any) -> Callable[[Any], Any]:
        old_dist = linearized[0]

        def output_kl(dist: Any) -> jax.Array:
            return weighted_mean(distributions.kl_divergence(old_dist, dist), weights)

        return make_gauss_newton_vector_product(
            policy, output_kl, params, agent.damping, linearized=linearized
        )

    def context(p: Any) -> dict[str, Any]:
        # The first lines of natural_step.actor_step: one linearization of the policy,
        # the surrogate's gradient through its transpose, then CG's direction.
        with jax.default_matmul_precision(TRUST_REGION_PRECISION):
            linearized = jax.linearize(policy, p)
            old_dist = jax.lax.stop_gradient(linearized[0])
            loss, dist_grad = jax.value_and_grad(surrogate_at)(old_dist)
            (grad,) = jax.linear_transpose(linearized[1], p)(dist_grad)
            cg = conjugate_gradient(fvp_of(linearized), grad, agent.cg_iters, CG_RESIDUAL_TOL)
            curvature = jax.tree_util.tree_reduce(
                jnp.add,
                jax.tree_util.tree_map(lambda x, g, r: jnp.vdot(x, g - r), cg.x, grad, cg.residual),
            )
        return {
            "linearized": linearized,
            "grad": grad,
            "direction": jax.tree_util.tree_map(jnp.negative, cg.x),
            "curvature": curvature,
            "loss": loss,
        }

    ctx = jax.jit(context)(params)

    def fvp(linearized: Any, vector: Any) -> Any:
        with jax.default_matmul_precision(TRUST_REGION_PRECISION):
            return fvp_of(linearized)(vector)

    def cg(linearized: Any, grad: Any) -> Any:
        with jax.default_matmul_precision(TRUST_REGION_PRECISION):
            return conjugate_gradient(fvp_of(linearized), grad, agent.cg_iters, CG_RESIDUAL_TOL)

    def line_search(linearized: Any, direction: Any, curvature: jax.Array, loss: jax.Array) -> Any:
        old_dist = linearized[0]

        def surrogate(p: Any) -> jax.Array:
            return surrogate_at(policy(p))

        def mean_kl(p: Any) -> jax.Array:
            return weighted_mean(distributions.kl_divergence(old_dist, policy(p)), weights)

        with jax.default_matmul_precision(TRUST_REGION_PRECISION):
            step = ActorStep(
                params, direction, fvp_of(linearized), curvature, loss, surrogate, mean_kl
            )
            return rule.step(step)

    def actor_step(p: Any, minibatch: Any, w: jax.Array, key: jax.Array) -> Any:
        with jax.default_matmul_precision(TRUST_REGION_PRECISION):
            return natural_step.actor_step(
                rule,
                actor_apply,
                p,
                minibatch,
                w,
                key,
                damping=agent.damping,
                cg_iters=agent.cg_iters,
                fvp_batch_size=agent.fvp_batch_size,
            )

    def search_trips(backtracks: Any, failed: Any) -> dict[str, float]:
        return {
            LINE_SEARCH_LOOP: line_search_trips(
                float(backtracks), float(failed), 1, agent.max_backtracks
            )
        }

    def line_search_stats_trips(out: Any) -> dict[str, float]:
        search = out.line_search  # the rule's StepResult
        return search_trips(jnp.where(search.accepted, search.index, 0), ~search.accepted)

    def actor_step_trips(out: Any) -> dict[str, float]:
        stats = out[1]
        trips = search_trips(stats["backtracks"], stats["line_search_failed"])
        return {CG_LOOP: float(stats["cg_iterations"]), **trips}

    size = f"{total} samples, obs {batch.obs.shape[1]}, action {batch.action.shape[1]}"
    rebuilt = "rebuilt from jaxrl.core with the update's shapes and first actor step's inputs"
    return [
        Program(
            f"trpo-prepare-{shape}",
            "part",
            "trpo",
            shape,
            f"TRPO.prepare_batch (values, GAE, scaling, old log-probs); {size}",
            agent.prepare_batch,
            (state, rollout),
        ),
        Program(
            f"trpo-critic-{shape}",
            "part",
            "trpo",
            shape,
            f"on_policy.critic_steps: {agent.optim_critic_iters} Adam steps; {size}",
            lambda critic, b, w: on_policy.critic_steps(critic, b, w, agent.optim_critic_iters),
            (state.critic, batch, weights),
        ),
        Program(
            f"trpo-actor-step-{shape}",
            "part",
            "trpo",
            shape,
            f"natural_step.actor_step (gradient, CG, line search), float32; {size}",
            actor_step,
            (params, batch, weights, jax.random.key(2)),
            actor_step_trips,
        ),
        Program(
            f"trpo-fvp-{shape}",
            "part",
            "trpo",
            shape,
            f"one Gauss-Newton Fisher-vector product (J^T M J v + damping v), float32; {rebuilt}",
            fvp,
            (ctx["linearized"], ctx["grad"]),
        ),
        Program(
            f"trpo-cg-{shape}",
            "part",
            "trpo",
            shape,
            f"conjugate_gradient over that product (<= {agent.cg_iters} iterations); {rebuilt}",
            cg,
            (ctx["linearized"], ctx["grad"]),
            lambda out: {CG_LOOP: float(out.iterations)},
        ),
        Program(
            f"trpo-line-search-{shape}",
            "part",
            "trpo",
            shape,
            f"TRPO._step: step length + backtracking_line_search (<= {agent.max_backtracks} "
            f"candidates, each a KL and a surrogate); {rebuilt}",
            line_search,
            (ctx["linearized"], ctx["direction"], ctx["curvature"], ctx["loss"]),
            line_search_stats_trips,
        ),
    ]


def ddpg_programs(shape: str, capacity: int) -> list[Program]:
    from jaxrl.replay import Transition

    agent, config = agent_for("ddpg", shape, buffer_size=capacity)
    obs_space, act_space = shape_spaces(shape)
    num_envs = 1 if shape == "mujoco" else config.num_envs
    state = agent.init(jax.random.key(0), obs_space, act_space, num_envs)
    buffer = agent.init_buffer(state, num_envs)
    data = synthetic(capacity // num_envs, num_envs, obs_space.shape[0], act_space.shape[0], 0)
    segment = as_batch(Transition, data)
    buffer = jax.jit(type(buffer).extend)(buffer, segment)

    def sample_and_update(state: Any, buffer: Any, key: jax.Array) -> Any:
        batch_key, update_key = jax.random.split(key)
        return agent.update(state, agent.sample_batch(buffer, batch_key), update_key)

    what = (
        f"{SHAPE_PRESETS[shape][0]} preset: hidden {list(agent.hidden_sizes)} "
        f"{agent.activation}, batch {agent.batch_size}, {agent.n_step_return_horizon}-step returns"
    )
    programs = [
        Program(
            f"ddpg-update-{shape}",
            "update",
            "ddpg",
            shape,
            f"jit(sample_batch + DDPG.update) on a filled {capacity:,}-transition buffer; {what}",
            sample_and_update,
            (state, buffer, jax.random.key(1)),
        ),
    ]
    if shape == "mujoco":
        batch = jax.jit(agent.sample_batch)(buffer, jax.random.key(3))
        programs.append(
            Program(
                "ddpg-update-only-mujoco",
                "part",
                "ddpg",
                shape,
                f"jit(DDPG.update) on one sampled batch (no sampling); {what}",
                agent.update,
                (state, batch, jax.random.key(1)),
            )
        )
    return programs


def period_program(algo: str, quick: bool) -> Program:
    from jaxrl.training import make_train_loop

    shape = "pendulum-preset" if algo == "trpo" else "pendulum"
    overrides = {}
    if quick:  # a short period: 2 collections and 2 evaluation episodes
        overrides = (
            dict(num_steps=64, eval_every=2048, total_steps=4096, eval_episodes=2)
            if algo == "trpo"
            else dict(eval_every=80, total_steps=160, eval_episodes=2)
        )
    from jaxrl.config.run_config import RunConfig

    config = RunConfig.from_preset(
        algo, "Pendulum-v1", SHAPE_PRESETS[shape][0], backend="jax", **overrides
    )
    agent = config.make_agent()
    loop = make_train_loop(agent, "Pendulum-v1", config)
    carry = jax.jit(loop.init)(jax.random.key(0))
    collections = loop.layout.collections_per_period
    per_collect = config.num_envs * config.num_steps

    def trips(out: Any) -> dict[str, float]:
        metrics = out[1]
        if algo == "ddpg":
            return {}
        steps = actor_steps_per_update(agent, per_collect)
        result = {CG_LOOP: float(np.mean(metrics["cg_iterations"]))}
        if "backtracks" in metrics:
            result[LINE_SEARCH_LOOP] = float(
                np.mean(
                    [
                        line_search_trips(b, f, steps, agent.max_backtracks)
                        for b, f in zip(
                            np.asarray(metrics["backtracks"]),
                            np.asarray(metrics["line_search_failures"]),
                            strict=True,
                        )
                    ]
                )
            )
        return result

    notes = (
        f"jit(make_train_loop(...).run_period), one seed, gymnax Pendulum-v1, "
        f"{SHAPE_PRESETS[shape][0]} preset: {collections} collections of {config.num_envs} x "
        f"{config.num_steps} env steps with their updates, then {config.eval_episodes} "
        f"evaluation episodes"
    )
    return Program(
        f"{algo}-period-{shape}", "driver", algo, shape, notes, loop.run_period, (carry,), trips
    )


def over_seeds(program: Program, num_seeds: int) -> Program:
    """``program`` vmapped over ``num_seeds`` seeds (**Seeds** in ``roofline.py``): typed keys
    split, every other input repeated; loop trips read from seed 0's outputs."""
    if num_seeds == 1:
        return program

    def stack(x: Any) -> jax.Array:
        x = jnp.asarray(x)
        if jnp.issubdtype(x.dtype, jax.dtypes.prng_key) and x.shape == ():
            return jax.random.split(x, num_seeds)
        return jnp.broadcast_to(x, (num_seeds, *x.shape))

    trips = program.trips
    return dataclasses.replace(
        program,
        name=f"{program.name}-x{num_seeds}",
        notes=f"jax.vmap over {num_seeds} seeds of: {program.notes}",
        fn=jax.vmap(program.fn),
        args=jax.tree_util.tree_map(stack, program.args),
        trips=None
        if trips is None
        else (lambda out: trips(jax.tree_util.tree_map(lambda x: x[0], out))),
        num_seeds=num_seeds,
    )


ALL_PROGRAMS = (
    "npg-update-pendulum",
    "trpo-update-pendulum",
    "npg-update-mujoco",
    "trpo-update-mujoco",
    "trpo-update-pendulum-preset",
    *(
        f"trpo-{part}-{shape}"
        for shape in ("pendulum", "mujoco")
        for part in ("prepare", "critic", "actor-step", "fvp", "cg", "line-search")
    ),
    "ddpg-update-mujoco",
    "ddpg-update-only-mujoco",
    "ddpg-update-pendulum",
    "trpo-period-pendulum-preset",
    "ddpg-period-pendulum",
    "ddpg-host-step",
)
QUICK_PROGRAMS = (
    "trpo-update-pendulum",
    "trpo-fvp-pendulum",
    "trpo-cg-pendulum",
    "ddpg-update-mujoco",
    "trpo-period-pendulum-preset",
    "ddpg-host-step",
)


def build(name: str, quick: bool) -> list[Program]:
    """The program(s) called ``name`` (built lazily: inputs are made only for what runs)."""
    if name.startswith(("npg-update", "trpo-update")):
        algo, _, shape = name.split("-", 2)
        return update_programs(algo, shape)
    if name.startswith("trpo-") and name.rsplit("-", 1)[-1] in ("pendulum", "mujoco"):
        shape = name.rsplit("-", 1)[-1]
        return [p for p in trpo_part_programs(shape) if p.name == name]
    if name.startswith("ddpg-update"):
        shape = name.rsplit("-", 1)[-1]
        capacity = 20_000 if shape == "pendulum" else (10_000 if quick else 100_000)
        return [p for p in ddpg_programs(shape, capacity) if p.name == name]
    if name.startswith(("trpo-period", "ddpg-period")):
        return [period_program(name.split("-")[0], quick)]
    raise ValueError(f"unknown program {name}")


def selected(patterns: list[str] | None, quick: bool) -> list[str]:
    if not patterns:
        return list(QUICK_PROGRAMS if quick else ALL_PROGRAMS)
    names = [n for n in ALL_PROGRAMS if any(fnmatch.fnmatch(n, p) for p in patterns)]
    if not names:
        raise SystemExit(f"no program matches {patterns}; programs: {', '.join(ALL_PROGRAMS)}")
    return names
