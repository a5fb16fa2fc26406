"""NPG and TRPO are siblings over one natural-gradient learner: each has only its own
fields; TRPO takes Tianshou's ``trust_region_size`` for parity, ignores it and says so; every
field carries its help (the docstring's field list and the command line's help)."""

from __future__ import annotations

import dataclasses
import warnings

import gymnasium
import pytest

import jaxrl
from jaxrl.algorithms import NaturalGradient, registry
from jaxrl.algorithms._common import field_help
from jaxrl.config.spellings import hyperparameters


def names(cls):
    return {f.name for f in dataclasses.fields(cls)}


def test_npg_and_trpo_add_only_their_own_fields():
    shared = names(NaturalGradient)
    assert names(jaxrl.NPG) - shared == {"trust_region_size", "normalize_step"}
    assert names(jaxrl.TRPO) - shared == {"max_kl", "backtrack_coeff", "max_backtracks"}
    assert not issubclass(jaxrl.TRPO, jaxrl.NPG)
    with pytest.raises(NotImplementedError, match="NaturalGradient has no actor rule"):
        NaturalGradient().actor_rule()


def test_trpo_takes_and_ignores_the_npg_step_size_with_a_warning():
    with pytest.warns(UserWarning, match="TRPO ignores trust_region_size: TRPO's step is set"):
        agent = jaxrl.TRPO(actor_step_size=0.3, max_kl=0.02)
    assert agent == jaxrl.TRPO(max_kl=0.02)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jaxrl.TRPO(max_kl=0.02)  # nothing to say


@pytest.mark.parametrize("algo", ["npg", "trpo", "ddpg"])
def test_every_field_has_help_and_the_docstring_lists_it(algo):
    cls = registry.get(algo).cls
    for field in dataclasses.fields(cls):
        help_text = field_help(field)
        assert help_text, f"{cls.__name__}.{field.name} has no help"
        assert f"      {field.name}: " in cls.__doc__
    on_the_command_line = {spec.name: spec.help for spec in hyperparameters(algo)}
    assert set(on_the_command_line) == names(cls) - {"actor_network", "critic_network"}
    assert on_the_command_line["gamma"] == "discount factor in [0, 1]"


def test_an_algorithm_is_its_fields_and_a_rule():
    """A natural-gradient algorithm is the shared fields plus an ActorRule value: a class
    whose rule is ``trpo_rule`` with TRPO's values updates exactly as TRPO does, and a rule
    of TRPO's surrogate with NPG's step is a third algorithm, with no line search."""
    import jax
    import numpy as np

    from jaxrl.algorithms import ActorRule, npg_rule, trpo_rule
    from jaxrl.algorithms.natural_step import importance_surrogate

    class FixedTRPO(NaturalGradient):
        def actor_rule(self) -> ActorRule:
            return trpo_rule(0.02, 0.5, 4)

    class RatioNPG(NaturalGradient):
        def actor_rule(self) -> ActorRule:
            return ActorRule(importance_surrogate, npg_rule(0.1).step)

    box = gymnasium.spaces.Box(-1.0, 1.0, (3,))
    rollout = jaxrl.Rollout(
        obs=jax.random.normal(jax.random.key(1), (8, 2, 3)),
        action=jax.random.normal(jax.random.key(2), (8, 2, 1)),
        reward=jax.random.normal(jax.random.key(3), (8, 2)),
        terminated=np.zeros((8, 2), bool),
        truncated=np.zeros((8, 2), bool),
        next_obs=jax.random.normal(jax.random.key(4), (8, 2, 3)),
    )
    shared = {"hidden_sizes": (8,), "repeat": 2, "batch_size": 8}
    trpo = jaxrl.TRPO(max_kl=0.02, backtrack_coeff=0.5, max_backtracks=4, **shared)
    results = {}
    for name, agent in (
        ("trpo", trpo),
        ("fixed", FixedTRPO(**shared)),
        ("mixed", RatioNPG(**shared)),
    ):
        state = agent.init(jax.random.key(0), box, gymnasium.spaces.Box(-1.0, 1.0, (1,)))
        results[name] = jax.jit(agent.update)(state, rollout, jax.random.key(5))
    (trpo_state, trpo_stats), (fixed_state, fixed_stats) = results["trpo"], results["fixed"]
    for ours, theirs in zip(
        jax.tree_util.tree_leaves((trpo_state, trpo_stats)),
        jax.tree_util.tree_leaves((fixed_state, fixed_stats)),
        strict=True,
    ):
        np.testing.assert_array_equal(ours, theirs)
    mixed_state, mixed_stats = results["mixed"]
    assert "step_size" not in mixed_stats and "step_size" in trpo_stats
    assert not np.allclose(
        jax.tree_util.tree_leaves(mixed_state.actor.params)[0],
        jax.tree_util.tree_leaves(trpo_state.actor.params)[0],
    )


@pytest.mark.parametrize("algo", ["npg", "trpo", "ddpg"])
def test_acting_on_observations_of_another_shape_names_the_shape_expected(algo):
    """``explore`` and ``policy`` check that observations end in the observation space's
    shape (when traced: a jitted call pays nothing), instead of failing inside Flax."""
    import jax
    import numpy as np

    agent = registry.get(algo).cls(hidden_sizes=(8,))
    box = gymnasium.spaces.Box(-1.0, 1.0, (3,))
    state = agent.init(jax.random.key(0), box, gymnasium.spaces.Box(-1.0, 1.0, (1,)))
    key = jax.random.key(1)
    expected = rf"{type(agent).__name__}: obs must have shape \[\.\.\., 3\] .*got \[2, 5\]"
    with pytest.raises(ValueError, match=expected):
        agent.explore(state, np.zeros((2, 5)), key)
    with pytest.raises(ValueError, match=expected):
        jax.jit(agent.policy, static_argnums=3)(state, np.zeros((2, 5)), key, True)
    assert agent.policy(state, np.zeros((2, 3)), key, True).shape == (2, 1)
    assert agent.policy(state, np.zeros(3), key, True).shape == (1,)


@pytest.mark.parametrize(("algo", "other"), [("npg", "ddpg"), ("trpo", "ddpg"), ("ddpg", "trpo")])
def test_a_train_state_of_another_algorithm_is_refused_by_name(algo, other):
    """``update``, ``explore`` and ``policy`` name the train state they expect instead of
    failing inside a network that got another algorithm's parameters."""
    import jax
    import numpy as np

    agent, stranger = (registry.get(name).cls(hidden_sizes=(8,)) for name in (algo, other))
    box = gymnasium.spaces.Box(-1.0, 1.0, (3,))
    action = gymnasium.spaces.Box(-1.0, 1.0, (1,))
    state = stranger.init(jax.random.key(0), box, action)
    own = type(agent.init(jax.random.key(0), box, action)).__name__
    name = type(agent).__name__
    expected = f"state must be the {own} {name}.init returns, got {type(state).__name__}"
    key = jax.random.key(1)
    with pytest.raises(TypeError, match=rf"{name}: {expected}"):
        agent.explore(state, np.zeros((2, 3)), key)
    with pytest.raises(TypeError, match=rf"{name}: {expected}"):
        jax.jit(agent.policy, static_argnums=3)(state, np.zeros(3), key, True)
    with pytest.raises(TypeError, match=rf"{name}\.update: {expected}"):
        agent.update(state, None, key)
