"""The natural-gradient learner NPG and TRPO share, with Tianshou's semantics and defaults.

:class:`NaturalGradient` holds the fields both algorithms have and composes one pure update
from the functions of :mod:`jaxrl.algorithms.on_policy` (the batch and the critic) and
:mod:`jaxrl.algorithms.natural_step` (the actor step): ``prepare_batch`` over the rollout,
then ``repeat`` passes over shuffled minibatches, each an actor step and the critic's Adam
steps. What NPG and TRPO do differently is one value, the
:class:`~jaxrl.algorithms.natural_step.ActorRule` that :meth:`NaturalGradient.actor_rule`
returns (:mod:`jaxrl.algorithms.npg`, :mod:`jaxrl.algorithms.trpo`); each class adds only
its own fields.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jax import lax

from jaxrl.algorithms import natural_step, on_policy
from jaxrl.algorithms._common import (
    Schedule,
    action_bounds,
    check_bounds,
    check_spaces,
    check_state,
    check_structure,
    document_fields,
    hyperparameter,
    new_train_state,
    observations,
    scheduled_learning_rate,
    set_learning_rate,
    to_env_action,
)
from jaxrl.algorithms.natural_step import TRUST_REGION_PRECISION, ActorRule, summarize_steps
from jaxrl.algorithms.on_policy import OnPolicyBatch, OnPolicyState, minibatch_layout
from jaxrl.algorithms.protocol import ActionSample, LearningMode
from jaxrl.core import distributions
from jaxrl.core._checks import check_key
from jaxrl.core.normalization import RunningMeanStd
from jaxrl.networks import Activation, CategoricalActor, GaussianActor, ValueCritic
from jaxrl.rollout import Rollout
from jaxrl.spaces import SpaceSpec

Array = jax.Array
PyTree = Any

# Tianshou 1.x keyword names NPG and TRPO accept (``accept_aliases``).
TIANSHOU_1X_ALIASES = {
    "actor_step_size": "trust_region_size",
    "discount_factor": "gamma",
    "reward_normalization": "return_scaling",
    "lr_scheduler": "lr_schedule",
}


@document_fields
class NaturalGradient(struct.PyTreeNode):
    """The shared part of NPG and TRPO: a frozen pytree of hyperparameters with jittable
    methods (a base class: :class:`jaxrl.NPG` and :class:`jaxrl.TRPO` are the algorithms).

    Numeric hyperparameters are pytree leaves (``jax.vmap`` can sweep them); fields that fix
    shapes or control flow are static. Tianshou 2.x names and defaults; ``fvp_batch_size``
    goes beyond Tianshou (its default keeps Tianshou's behaviour). Each field's description
    is its ``help`` metadata (also the command line's help), listed below.
    """

    learning_mode: ClassVar[LearningMode] = "on_policy"
    evaluates_both_modes: ClassVar[bool] = True  # sampled and deterministic actions
    batches_seeds_on_cpu: ClassVar[bool] = False  # CG and line-search loops batch badly

    gamma: float = hyperparameter(0.99, "discount factor in [0, 1]", low=0.0, high=1.0)
    gae_lambda: float = hyperparameter(0.95, "GAE lambda in [0, 1]", low=0.0, high=1.0)
    lr: float = hyperparameter(1e-3, "critic Adam learning rate", low=0.0)
    damping: float = hyperparameter(
        0.1, "Fisher damping added in Fisher-vector products (Tianshou: 0.1)", low=0.0
    )
    optim_critic_iters: int = hyperparameter(
        5, "critic Adam steps per minibatch", static=True, low=0
    )
    advantage_normalization: bool = hyperparameter(
        True, "normalize advantages over the whole collected batch", static=True
    )
    max_batchsize: int | None = hyperparameter(
        None,
        "chunk size when computing values and old log-probs, to bound memory (Tianshou's "
        "default: 256); None computes them in one batched pass (the default here: the same "
        "values up to float rounding, cheaper to run and to compile)",
        static=True,
        low=1,
    )
    return_scaling: bool = hyperparameter(
        False, "scale critic targets by a running std of the returns", static=True
    )
    batch_size: int | None = hyperparameter(
        None,
        "minibatch size (None: the whole batch, Tianshou's full-batch setting)",
        static=True,
        low=1,
    )
    repeat: int = hyperparameter(
        1, "passes over the batch per update (Tianshou's repeat_per_collect)", static=True, low=1
    )
    deterministic_eval: bool = hyperparameter(
        False, "evaluate with the policy's mode instead of sampling", static=True
    )
    action_scaling: bool = hyperparameter(
        True, "scale bounded actions from [-1, 1] to the action space's [low, high]", static=True
    )
    action_bound_method: Literal["clip", "tanh"] | None = hyperparameter(
        "clip", "bound raw actions before scaling: clip, tanh or None", static=True
    )
    lr_schedule: Schedule | None = hyperparameter(
        None,
        "optional update_count -> multiplier of lr (Tianshou's LambdaLR lr_scheduler), e.g. "
        "lambda n: 1 - n / num_updates for linear decay",
        static=True,
    )
    hidden_sizes: Sequence[int] = hyperparameter(
        (64, 64), "hidden layer sizes of the actor and critic MLPs", static=True
    )
    activation: Activation = hyperparameter("tanh", "activation of the hidden layers", static=True)
    init_gain: float = hyperparameter(
        1.0, "orthogonal-initialization gain of the hidden layers", static=True
    )
    actor_output_scale: float = hyperparameter(
        1.0, "scale of the actor's last-layer initialization", static=True
    )
    log_std_init: float = hyperparameter(
        0.0, "initial state-independent log standard deviation of the policy", static=True
    )
    actor_network: nn.Module | None = hyperparameter(
        None,
        "optional custom Flax module (obs -> DistributionParams) used instead",
        static=True,
    )
    critic_network: nn.Module | None = hyperparameter(
        None, "optional custom Flax module (obs -> V(s)) used instead", static=True
    )
    critic_batch_size: int | None = hyperparameter(
        None,
        "critic minibatch size: after each actor step the critic takes optim_critic_iters "
        "passes over the actor's minibatch in shuffled minibatches of this size, one Adam step "
        "each (sb3-contrib's n_critic_updates and batch_size); None: optim_critic_iters steps "
        "on the actor's minibatch (Tianshou)",
        static=True,
        low=1,
    )
    cg_iters: int = hyperparameter(
        10, "conjugate-gradient iterations (Tianshou: 10)", static=True, low=1
    )
    fvp_batch_size: int | None = hyperparameter(
        None,
        "if set, Fisher-vector products use a random subsample of this many minibatch samples "
        "(cheaper CG); None uses the whole minibatch (beyond Tianshou)",
        static=True,
        low=1,
    )

    def update_loops(self, batch: int) -> dict[str, int]:
        """The bounds of one update's sequential loops for a batch of ``batch`` transitions
        (:func:`jaxrl.algorithms.protocol.update_loops`)."""
        positions, _ = minibatch_layout(batch, self.batch_size)
        minibatch = positions.shape[1]
        critic = self.optim_critic_iters
        if self.critic_batch_size is not None:
            critic *= len(minibatch_layout(minibatch, self.critic_batch_size)[0])
        return {
            "actor steps": self.repeat * len(positions),
            "conjugate-gradient iterations per actor step": self.cg_iters,
            "critic steps per actor step": critic,
        }

    def __post_init__(self) -> None:
        check_structure(self)
        check_bounds(self)

    def actor_rule(self) -> ActorRule:
        """The surrogate and the step along the natural-gradient direction: the algorithm's
        (:func:`~jaxrl.algorithms.npg_rule`, :func:`~jaxrl.algorithms.trpo_rule`)."""
        raise NotImplementedError(f"{type(self).__name__} has no actor rule (use NPG or TRPO)")

    # ------------------------------------------------------------------ construction
    def networks(self, action_space: SpaceSpec) -> tuple[nn.Module, nn.Module]:
        """``(actor, critic)`` Flax modules: ``obs -> DistributionParams`` (Gaussian for a
        Box, categorical for a Discrete space) and ``obs -> V(s) [...]``
        (``actor_network``/``critic_network`` where given)."""
        common = {"hidden_sizes": tuple(self.hidden_sizes), "activation": self.activation}
        if self.actor_network is not None:
            actor = self.actor_network
        elif action_space.kind == "box":
            actor = GaussianActor(
                action_dim=math.prod(action_space.shape),
                gain=self.init_gain,
                output_scale=self.actor_output_scale,
                log_std_init=self.log_std_init,
                **common,
            )
        else:
            actor = CategoricalActor(
                num_actions=action_space.n,
                gain=self.init_gain,
                output_scale=self.actor_output_scale,
                **common,
            )
        critic = self.critic_network or ValueCritic(gain=self.init_gain, **common)
        return actor, critic

    def init(self, key: Array, observation_space: Any, action_space: Any) -> OnPolicyState:
        """Initialize networks, optimizer and statistics for the given spaces.

        Args:
          key: PRNG key.
          observation_space: a gymnasium or gymnax ``Box``.
          action_space: a gymnasium or gymnax ``Box`` (continuous) or ``Discrete``.
        """
        check_key(f"{type(self).__name__}.init: key", key)
        obs_space, act_space = check_spaces(
            observation_space, action_space, type(self).__name__, discrete=True
        )
        actor_module, critic_module = self.networks(act_space)
        actor_key, critic_key = jax.random.split(key)
        dummy_obs = jnp.zeros((1, *obs_space.shape), jnp.float32)
        low, high = action_bounds(act_space, self.action_scaling)
        return OnPolicyState(
            actor=new_train_state(actor_module, actor_key, (dummy_obs,)),
            critic=new_train_state(critic_module, critic_key, (dummy_obs,), self.lr),
            return_rms=RunningMeanStd.create(()),
            action_low=low,
            action_high=high,
            num_updates=jnp.zeros((), jnp.int32),
            observation_space=obs_space,
            action_space=act_space,
        )

    def init_training(
        self, key: Array, observation_space: Any, action_space: Any, num_envs: int
    ) -> tuple[OnPolicyState, None]:
        """:meth:`init`; on-policy learning keeps no buffer."""
        return self.init(key, observation_space, action_space), None

    # ------------------------------------------------------------------ acting
    @property
    def evaluates_deterministically(self) -> bool:
        """Evaluation follows ``deterministic_eval`` (Tianshou's policy option)."""
        return bool(self.deterministic_eval)

    def explore(
        self, state: OnPolicyState, obs: Array, key: Array, env_steps: Array | None = None
    ) -> tuple[OnPolicyState, ActionSample]:
        """Training actions for ``obs [..., *obs_shape]``: sampled from the policy.

        Returns:
          ``(state, ActionSample(action, env_action))``: the state (unchanged), the raw
          sample to store in rollouts and the bounded, scaled action for the environment.
          ``env_steps`` is unused (DDPG's warm-up reads it).
        """
        return state, self._actions(state, obs, key, False)

    def policy(
        self, state: OnPolicyState, obs: Array, key: Array, deterministic: bool | Array
    ) -> Array:
        """Environment actions for ``obs [..., *obs_shape]``: sampled, or the distribution's
        mode when ``deterministic`` (a bool, may be traced; ``key`` unused then)."""
        return self._actions(state, obs, key, deterministic).env_action

    def _actions(
        self, state: OnPolicyState, obs: Array, key: Array, deterministic: bool | Array
    ) -> ActionSample:
        obs = observations(state, obs, type(self).__name__, OnPolicyState)
        dist = state.actor.apply_fn(state.actor.params, obs)
        if isinstance(deterministic, bool | np.bool_) and deterministic:
            # No sampling is traced for a static deterministic policy (evaluation).
            dtype = jnp.int32 if state.action_space.kind == "discrete" else jnp.float32
            action = distributions.mode(dist).astype(dtype)
        else:
            sampled = distributions.sample(key, dist)
            mode = distributions.mode(dist)
            action = jnp.where(deterministic, mode, sampled).astype(sampled.dtype)
        return ActionSample(action=action, env_action=to_env_action(state, action, self))

    # ------------------------------------------------------------------ learning
    def update(
        self, state: OnPolicyState, rollout: Rollout, key: Array
    ) -> tuple[OnPolicyState, dict[str, Any]]:
        """One learning step on a freshly collected rollout (Tianshou's ``process_fn`` +
        ``learn``): :meth:`prepare_batch`, then ``repeat`` passes over shuffled minibatches,
        each an actor step then the critic's Adam steps.

        Args:
          state: the train state.
          rollout: a time-major :class:`jaxrl.Rollout` (``[T, N, ...]``).
          key: PRNG key for minibatch shuffling and FVP subsampling.

        Returns:
          ``(new_state, stats)``; ``stats`` maps ``actor_loss``, ``critic_loss`` (the
          critic's mean squared error against its targets at each minibatch's last Adam
          step), ``kl`` (and TRPO's ``step_size``) to :class:`jaxrl.core.SummaryStats` over
          the minibatch steps, plus
          diagnostics: ``cg_residual`` (SummaryStats), ``cg_iterations`` (SummaryStats),
          ``backtracks`` (total line-search backtracks), ``line_search_failures`` and
          ``rejected_steps`` (non-finite steps refused, parameters kept).
        """
        check_state(f"{type(self).__name__}.update", state, OnPolicyState)
        check_key(f"{type(self).__name__}.update: key", key)
        batch, return_rms = self.prepare_batch(state, rollout)
        actor_params, critic, per_step = self._learn(state, batch, key)
        new_state = state.replace(
            actor=state.actor.replace(
                params=actor_params, step=state.actor.step + per_step["kl"].shape[0]
            ),
            critic=critic,
            return_rms=return_rms,
            num_updates=state.num_updates + 1,
        )
        return new_state, summarize_steps(per_step)

    def prepare_batch(
        self, state: OnPolicyState, rollout: Rollout
    ) -> tuple[OnPolicyBatch, RunningMeanStd]:
        """:func:`jaxrl.algorithms.on_policy.prepare_batch` with this algorithm's fields."""
        return on_policy.prepare_batch(
            state,
            rollout,
            gamma=self.gamma,
            gae_lambda=self.gae_lambda,
            return_scaling=self.return_scaling,
            advantage_normalization=self.advantage_normalization,
            max_batchsize=self.max_batchsize,
        )

    def _learn(
        self, state: OnPolicyState, batch: OnPolicyBatch, key: Array
    ) -> tuple[PyTree, Any, dict[str, Array]]:
        """``repeat`` passes over shuffled minibatches (Tianshou's ``learn``); returns the
        actor's parameters, the critic and per-step statistics ``[repeat * M]``."""
        total = batch.advantage.shape[0]
        actor_apply = state.actor.apply_fn
        rule = self.actor_rule()
        learning_rate = scheduled_learning_rate(self.lr, self.lr_schedule, state.num_updates)
        critic = state.critic.replace(
            opt_state=set_learning_rate(state.critic.opt_state, learning_rate)
        )
        positions, mask = minibatch_layout(total, self.batch_size)
        shuffle = positions.shape[0] > 1

        def minibatch_step(carry: tuple, inputs: tuple) -> tuple[tuple, dict]:
            actor_params, critic_state = carry
            indices, weights, step_key = inputs
            minibatch = jax.tree_util.tree_map(lambda x: x[indices], batch)
            critic_key = None
            if self.critic_batch_size is not None:  # else the actor's key stays as it was
                step_key, critic_key = jax.random.split(step_key)
            # The natural-gradient step at float32 on every backend: conjugate gradients
            # amplify the rounding of GPUs' default TF32 matmuls by the Fisher's condition.
            with jax.default_matmul_precision(TRUST_REGION_PRECISION):
                actor_params, actor_stats = natural_step.actor_step(
                    rule,
                    actor_apply,
                    actor_params,
                    minibatch,
                    weights,
                    step_key,
                    damping=self.damping,
                    cg_iters=self.cg_iters,
                    fvp_batch_size=self.fvp_batch_size,
                )
            critic_state, critic_loss, critic_rejected = on_policy.critic_steps(
                critic_state,
                minibatch,
                weights,
                self.optim_critic_iters,
                critic_key,
                self.critic_batch_size,
            )
            actor_stats["rejected"] = actor_stats["rejected"] + critic_rejected
            return (actor_params, critic_state), {**actor_stats, "critic_loss": critic_loss}

        def one_pass(carry: tuple, pass_key: Array) -> tuple[tuple, dict]:
            perm_key, steps_key = jax.random.split(pass_key)
            order = jax.random.permutation(perm_key, total) if shuffle else jnp.arange(total)
            indices = order[jnp.asarray(positions)]
            step_keys = jax.random.split(steps_key, positions.shape[0])
            return lax.scan(
                minibatch_step, carry, (indices, jnp.asarray(mask, jnp.float32), step_keys)
            )

        (actor_params, critic), per_step = lax.scan(
            one_pass, (state.actor.params, critic), jax.random.split(key, self.repeat)
        )
        per_step = jax.tree_util.tree_map(lambda x: x.reshape(-1), per_step)
        return actor_params, critic, per_step
