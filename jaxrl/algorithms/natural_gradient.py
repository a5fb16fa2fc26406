"""The natural-gradient learner NPG and TRPO share (Tianshou's TRPO is its NPG with another
actor step), with Tianshou's semantics and defaults.

:class:`NaturalGradient` is one pure update: values in one batched pass (or chunks), GAE,
return scaling, advantage normalization, old log-probabilities, ``repeat`` passes over
shuffled minibatches, each with a natural-gradient actor step (conjugate gradients on
Fisher-vector products) and ``optim_critic_iters`` Adam steps on the critic. A subclass gives
the actor's surrogate loss and the step along the natural-gradient direction:
:class:`jaxrl.algorithms.npg.NPG` a fixed multiple of it, :class:`jaxrl.algorithms.trpo.TRPO`
a KL-bounded step with a backtracking line search. Each keeps only its own fields.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Literal, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from flax.training.train_state import TrainState
from jax import lax
from optax import tree_utils as otu

from jaxrl.algorithms._common import (
    Schedule,
    activation_option,
    adam_with_injected_lr,
    check_field,
    check_int_field,
    document_fields,
    guarded_gradient_step,
    hyperparameter,
    no_optimizer,
    schedule_option,
    scheduled_learning_rate,
    set_learning_rate,
)
from jaxrl.algorithms._types import ActionSample
from jaxrl.algorithms.protocol import LearningMode
from jaxrl.core import distributions
from jaxrl.core.actions import check_bound_method, map_action
from jaxrl.core.normalization import RunningMeanStd
from jaxrl.core.returns import gae
from jaxrl.core.stats import SummaryStats
from jaxrl.core.tree import all_finite, tree_select
from jaxrl.core.trust_region import (
    ConjugateGradientResult,
    conjugate_gradient,
    make_gauss_newton_vector_product,
)
from jaxrl.networks import (
    CategoricalActor,
    GaussianActor,
    ValueCritic,
    check_activation,
    stable_apply,
)
from jaxrl.rollout import Rollout, check_time_major
from jaxrl.spaces import SpaceSpec, describe_space

Array = jax.Array
PyTree = Any

# Tianshou's constants: epsilon of the return scaling, CG tolerance.
RETURN_SCALING_EPS = 1e-8
CG_RESIDUAL_TOL = 1e-10
# Matmul precision of the natural-gradient step (gradient, Fisher-vector products, conjugate
# gradients, KL checks): float32 on every backend, not GPUs' default TF32. Critic steps and
# acting keep the backend's default.
TRUST_REGION_PRECISION = "float32"


class OnPolicyState(struct.PyTreeNode):
    """Everything NPG/TRPO learn and carry between updates (a pytree).

    Attributes:
      actor: ``TrainState`` of the policy network (updated by natural-gradient steps, so its
        optimizer is a placeholder); ``actor.step`` counts actor steps.
      critic: ``TrainState`` of the value network with its Adam state.
      return_rms: running statistics of the returns (return scaling).
      action_low, action_high: Box bounds for action mapping (zeros for Discrete).
      num_updates: number of ``update`` calls so far (drives the learning-rate schedule).
      action_space, observation_space: static descriptions of the spaces.
    """

    actor: TrainState
    critic: TrainState
    return_rms: RunningMeanStd
    action_low: Array
    action_high: Array
    num_updates: Array
    observation_space: SpaceSpec = struct.field(pytree_node=False)
    action_space: SpaceSpec = struct.field(pytree_node=False)


class OnPolicyBatch(NamedTuple):
    """What the learning passes of an NPG/TRPO update see (:meth:`NPG.prepare_batch`):
    ``B = T * N`` samples of a rollout, flattened time-major.

    Attributes:
      obs: ``[B, *obs_shape]`` float32 observations.
      action: ``[B, *action_shape]`` the collected raw actions.
      advantage: ``[B]`` GAE advantages (normalized with ``advantage_normalization``).
      target: ``[B]`` the critic's regression targets: TD(lambda) returns, divided by the
        running return std with ``return_scaling``.
      log_prob_old: ``[B]`` log-probabilities of the actions under the collecting policy.
    """

    obs: Array
    action: Array
    advantage: Array
    target: Array
    log_prob_old: Array


class ActorStep(NamedTuple):
    """What an actor step (``NaturalGradient._step``) starts from.

    Attributes:
      params: the actor's parameters ``theta``.
      direction: the natural-gradient direction ``d = -F^-1 g`` (a pytree like ``params``).
      fvp: ``v -> (F + damping I) v``, the damped Fisher-vector product at ``theta``.
      curvature: ``d.(F + damping I)d``, from conjugate gradients' residual (no extra product).
      loss: the surrogate at ``theta``.
      surrogate: ``params -> loss`` on the minibatch.
      mean_kl: ``params -> mean KL(pi_theta || pi_params)`` on the minibatch.
    """

    params: PyTree
    direction: PyTree
    fvp: Callable[[PyTree], PyTree]
    curvature: Array
    loss: Array
    surrogate: Callable[[PyTree], Array]
    mean_kl: Callable[[PyTree], Array]

    def step_length(self, kl_bound: float | Array) -> Array:
        """``sqrt(2 kl_bound / d.(F + damping I)d)``: the multiple of ``d`` at which the KL's
        quadratic model reaches ``kl_bound``; 0 for a non-positive or non-finite curvature
        (a zero direction included), so that no step is taken."""
        usable = jnp.isfinite(self.curvature) & (self.curvature > 0)
        safe = jnp.where(usable, self.curvature, 1.0)
        return jnp.where(usable, jnp.sqrt(2.0 * kl_bound / safe), 0.0)


# Tianshou 1.x keyword names NPG and TRPO accept (``accept_aliases``).
TIANSHOU_1X_ALIASES = {
    "actor_step_size": "trust_region_size",
    "discount_factor": "gamma",
    "reward_normalization": "return_scaling",
    "lr_scheduler": "lr_schedule",
}


def weighted_mean(x: Array, weights: Array) -> Array:
    """``sum(x * weights) / sum(weights)`` over a minibatch (``weights`` mask padding)."""
    return jnp.sum(x * weights) / jnp.sum(weights)


def minibatch_layout(total: int, batch_size: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Positions ``[M, S]`` and validity mask of Tianshou's ``split(batch_size, merge_last)``.

    ``M = total // batch_size`` minibatches of ``batch_size``, the remainder merged into the
    last one; shorter rows are padded (mask False). ``None`` or a size ``>= total`` gives one
    minibatch holding everything.
    """
    if batch_size is None or batch_size >= total:
        return np.arange(total)[None], np.ones((1, total), bool)
    count = total // batch_size
    width = batch_size + total % batch_size
    positions = np.zeros((count, width), np.int32)
    mask = np.zeros((count, width), bool)
    for i in range(count):
        size = width if i == count - 1 else batch_size
        positions[i, :size] = i * batch_size + np.arange(size)
        mask[i, :size] = True
    return positions, mask


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

    gamma: float = hyperparameter(0.99, "discount factor in [0, 1]")
    gae_lambda: float = hyperparameter(0.95, "GAE lambda in [0, 1]")
    lr: float = hyperparameter(1e-3, "critic Adam learning rate")
    damping: float = hyperparameter(
        0.1, "Fisher damping added in Fisher-vector products (Tianshou: 0.1)"
    )
    optim_critic_iters: int = hyperparameter(5, "critic Adam steps per minibatch", static=True)
    advantage_normalization: bool = hyperparameter(
        True, "normalize advantages over the whole collected batch", static=True
    )
    max_batchsize: int | None = hyperparameter(
        None,
        "chunk size when computing values and old log-probs, to bound memory (Tianshou's "
        "default: 256); None computes them in one batched pass (the default here: the same "
        "values up to float rounding, cheaper to run and to compile)",
        static=True,
    )
    return_scaling: bool = hyperparameter(
        False, "scale critic targets by a running std of the returns", static=True
    )
    batch_size: int | None = hyperparameter(
        None, "minibatch size (None: the whole batch, Tianshou's full-batch setting)", static=True
    )
    repeat: int = hyperparameter(
        1, "passes over the batch per update (Tianshou's repeat_per_collect)", static=True
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
        command_line=schedule_option("critic"),
    )
    hidden_sizes: Sequence[int] = hyperparameter(
        (64, 64), "hidden layer sizes of the actor and critic MLPs", static=True
    )
    activation: str = hyperparameter(
        "tanh",
        "activation of the hidden layers",
        static=True,
        command_line=activation_option("tanh"),
    )
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
        cli=False,
    )
    critic_network: nn.Module | None = hyperparameter(
        None, "optional custom Flax module (obs -> V(s)) used instead", static=True, cli=False
    )
    critic_batch_size: int | None = hyperparameter(
        None,
        "critic minibatch size: after each actor step the critic takes optim_critic_iters "
        "passes over the actor's minibatch in shuffled minibatches of this size, one Adam step "
        "each (sb3-contrib's n_critic_updates and batch_size); None: optim_critic_iters steps "
        "on the actor's minibatch (Tianshou)",
        static=True,
    )
    cg_iters: int = hyperparameter(10, "conjugate-gradient iterations (Tianshou: 10)", static=True)
    fvp_batch_size: int | None = hyperparameter(
        None,
        "if set, Fisher-vector products use a random subsample of this many minibatch samples "
        "(cheaper CG); None uses the whole minibatch (beyond Tianshou)",
        static=True,
    )

    # ------------------------------------------------------------------ validation
    def __post_init__(self) -> None:
        owner = type(self).__name__
        if isinstance(self.hidden_sizes, list):
            object.__setattr__(self, "hidden_sizes", tuple(self.hidden_sizes))
        self._check_leaves(owner)
        for name, low in (
            ("optim_critic_iters", 0),
            ("repeat", 1),
            ("cg_iters", 1),
        ):
            check_int_field(owner, name, getattr(self, name), low)
        check_int_field(owner, "batch_size", self.batch_size, 1, allow_none=True)
        check_int_field(owner, "critic_batch_size", self.critic_batch_size, 1, allow_none=True)
        check_int_field(owner, "max_batchsize", self.max_batchsize, 1, allow_none=True)
        check_int_field(owner, "fvp_batch_size", self.fvp_batch_size, 1, allow_none=True)
        if not all(isinstance(h, int) and h > 0 for h in self.hidden_sizes):
            raise ValueError(f"{owner}.hidden_sizes must be positive ints, got {self.hidden_sizes}")
        check_activation(self.activation)
        try:
            check_bound_method(self.action_bound_method)
        except ValueError as error:
            raise ValueError(f"{owner}.{error}") from None
        if self.lr_schedule is not None and not callable(self.lr_schedule):
            raise TypeError(f"{owner}.lr_schedule must be callable (update count -> factor)")

    def _check_leaves(self, owner: str) -> None:
        check_field(owner, "gamma", self.gamma, 0.0, 1.0)
        check_field(owner, "gae_lambda", self.gae_lambda, 0.0, 1.0)
        check_field(owner, "lr", self.lr, 0.0, math.inf)
        check_field(owner, "damping", self.damping, 0.0, math.inf)

    # ------------------------------------------------------------------ construction
    def _networks(self, action_space: SpaceSpec) -> tuple[nn.Module, nn.Module]:
        if self.actor_network is not None:
            actor = self.actor_network
        elif action_space.kind == "box":
            actor = GaussianActor(
                action_dim=math.prod(action_space.shape),
                hidden_sizes=tuple(self.hidden_sizes),
                activation=self.activation,
                gain=self.init_gain,
                output_scale=self.actor_output_scale,
                log_std_init=self.log_std_init,
            )
        else:
            actor = CategoricalActor(
                num_actions=action_space.n,
                hidden_sizes=tuple(self.hidden_sizes),
                activation=self.activation,
                gain=self.init_gain,
                output_scale=self.actor_output_scale,
            )
        critic = self.critic_network or ValueCritic(
            hidden_sizes=tuple(self.hidden_sizes), activation=self.activation, gain=self.init_gain
        )
        return actor, critic

    def init(self, key: Array, observation_space: Any, action_space: Any) -> OnPolicyState:
        """Initialize networks, optimizer and statistics for the given spaces.

        Args:
          key: PRNG key.
          observation_space: a gymnasium or gymnax ``Box``.
          action_space: a gymnasium or gymnax ``Box`` (continuous) or ``Discrete``.
        """
        obs_space = describe_space(observation_space, "observation_space")
        if obs_space.kind != "box":
            raise TypeError(
                f"observation_space must be a Box, got {type(observation_space).__name__}"
            )
        act_space = describe_space(action_space, "action_space")
        if act_space.kind == "box" and len(act_space.shape) != 1:
            raise ValueError(f"action_space must be a 1-D Box, got shape {act_space.shape}")
        actor_module, critic_module = self._networks(act_space)
        actor_key, critic_key = jax.random.split(key)
        dummy_obs = jnp.zeros((1, *obs_space.shape), jnp.float32)
        critic_tx = adam_with_injected_lr()
        critic = TrainState.create(
            apply_fn=stable_apply(critic_module),
            params=critic_module.init(critic_key, dummy_obs),
            tx=critic_tx,
        )
        # Strongly typed counters: the state returned by `update` must match this one exactly,
        # or `jax.jit(update)` would compile a second time.
        critic = critic.replace(
            step=jnp.zeros((), jnp.int32),
            opt_state=set_learning_rate(critic.opt_state, self.lr),
        )
        actor = TrainState.create(
            apply_fn=stable_apply(actor_module),
            params=actor_module.init(actor_key, dummy_obs),
            tx=no_optimizer(),
        ).replace(step=jnp.zeros((), jnp.int32))
        if act_space.kind == "box":
            low, high = jnp.asarray(act_space.low_array), jnp.asarray(act_space.high_array)
            if self.action_scaling and not (
                np.all(np.isfinite(act_space.low_array))
                and np.all(np.isfinite(act_space.high_array))
            ):
                raise ValueError(
                    "action_scaling=True needs a Box action_space with finite bounds; "
                    "pass action_scaling=False"
                )
        else:
            low = high = jnp.zeros((), jnp.float32)
        return OnPolicyState(
            actor=actor,
            critic=critic,
            return_rms=RunningMeanStd.create(()),
            action_low=low,
            action_high=high,
            num_updates=jnp.zeros((), jnp.int32),
            observation_space=obs_space,
            action_space=act_space,
        )

    # ------------------------------------------------------------------ acting
    def sample_actions(
        self, state: OnPolicyState, obs: Array, key: Array, deterministic: bool | Array = False
    ) -> ActionSample:
        """Sample (or, if ``deterministic``, take the mode of) the policy for a batch of obs.

        Args:
          state: the train state.
          obs: ``[..., *obs_shape]``.
          key: PRNG key (unused when deterministic).
          deterministic: a bool (may be traced).

        Returns:
          ``ActionSample(action, env_action)``: the raw action for rollouts and the mapped
          action for the environment.
        """
        dist = state.actor.apply_fn(state.actor.params, jnp.asarray(obs, jnp.float32))
        if isinstance(deterministic, bool | np.bool_) and deterministic:
            # No sampling is traced for a static deterministic policy (evaluation).
            action = distributions.mode(dist)
            dtype = jnp.int32 if state.action_space.kind == "discrete" else jnp.float32
            action = action.astype(dtype)
            return ActionSample(action=action, env_action=self.to_env_action(state, action))
        sampled = distributions.sample(key, dist)
        action = jnp.where(deterministic, distributions.mode(dist), sampled).astype(sampled.dtype)
        return ActionSample(action=action, env_action=self.to_env_action(state, action))

    def act(
        self, state: OnPolicyState, obs: Array, key: Array, deterministic: bool | Array = False
    ) -> Array:
        """Environment-ready actions for a batch of observations (see :meth:`sample_actions`)."""
        return self.sample_actions(state, obs, key, deterministic).env_action

    # ------------------------------------------------------------------ agent protocol
    @property
    def evaluates_deterministically(self) -> bool:
        """Evaluation follows ``deterministic_eval`` (Tianshou's policy option)."""
        return bool(self.deterministic_eval)

    def init_training(
        self, key: Array, observation_space: Any, action_space: Any, num_envs: int
    ) -> tuple[OnPolicyState, None]:
        """:meth:`init`; on-policy learning keeps no buffer."""
        return self.init(key, observation_space, action_space), None

    def explore(
        self, state: OnPolicyState, obs: Array, key: Array, env_steps: Array
    ) -> tuple[OnPolicyState, ActionSample]:
        """Training actions: sampled from the policy (the state is unchanged)."""
        return state, self.sample_actions(state, obs, key)

    def policy(
        self, state: OnPolicyState, obs: Array, key: Array, deterministic: bool | Array
    ) -> Array:
        """Environment actions: :meth:`act`."""
        return self.act(state, obs, key, deterministic)

    def to_env_action(self, state: OnPolicyState, action: Array) -> Array:
        """Bound and scale raw actions for a Box space; Discrete actions pass through."""
        if state.action_space.kind == "discrete":
            return action
        return map_action(
            action,
            state.action_low,
            state.action_high,
            self.action_scaling,
            self.action_bound_method,
        )

    # ------------------------------------------------------------------ learning
    def update(
        self, state: OnPolicyState, rollout: Rollout, key: Array
    ) -> tuple[OnPolicyState, dict[str, Any]]:
        """One learning step on a freshly collected rollout (Tianshou's ``process_fn`` +
        ``learn``).

        Args:
          state: the train state.
          rollout: a time-major :class:`jaxrl.Rollout` (``[T, N, ...]``).
          key: PRNG key for minibatch shuffling and FVP subsampling.

        Returns:
          ``(new_state, stats)``; ``stats`` maps ``actor_loss``, ``vf_loss``, ``kl`` (and TRPO's
          ``step_size``) to :class:`jaxrl.core.SummaryStats` over the minibatch steps, plus
          diagnostics: ``cg_residual`` (SummaryStats), ``cg_iterations`` (SummaryStats),
          ``backtracks`` (total line-search backtracks), ``line_search_failures`` and
          ``rejected_steps`` (non-finite steps refused, parameters kept).
        """
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
        return new_state, self._summarize(per_step)

    def prepare_batch(
        self, state: OnPolicyState, rollout: Rollout
    ) -> tuple[OnPolicyBatch, RunningMeanStd]:
        """The first step of :meth:`update` (Tianshou's pre-processing of a collected batch):
        the critic's values of ``obs`` and ``next_obs``, GAE advantages and TD(lambda)
        returns (:func:`jaxrl.core.gae`), return scaling with its running statistics, advantage
        normalization over the whole batch, and the log-probabilities of the collected actions.

        Args:
          state: the train state.
          rollout: a time-major :class:`jaxrl.Rollout` (``[T, N, ...]``).

        Returns:
          ``(batch, return_rms)``: the :class:`OnPolicyBatch` of ``B = T * N`` samples
          (flattened time-major: sample ``t * N + n``) and the return statistics updated with
          this batch's returns (unchanged without ``return_scaling``).
        """
        (num_steps, num_envs), obs, next_obs, actions = _flat_rollout(state, rollout)
        total = num_steps * num_envs
        critic, actor = state.critic, state.actor

        def value(o: Array) -> Array:
            return critic.apply_fn(critic.params, o)

        values = self._in_chunks(value, obs).reshape(num_steps, num_envs)
        next_values = self._in_chunks(value, next_obs).reshape(num_steps, num_envs)
        advantages, targets, return_rms = self._returns(
            state.return_rms, rollout, values, next_values
        )
        advantages, targets = advantages.reshape(total), targets.reshape(total)
        if self.advantage_normalization:
            advantages = _normalize_advantages(advantages)

        def old_log_prob(o: Array, a: Array) -> Array:
            return distributions.log_prob(actor.apply_fn(actor.params, o), a)

        batch = OnPolicyBatch(
            obs=obs,
            action=actions,
            advantage=advantages,
            target=targets,
            log_prob_old=self._in_chunks(old_log_prob, obs, actions),
        )
        return batch, return_rms

    def _in_chunks(self, fn: Callable[..., Array], *xs: Array) -> Array:
        """``fn(*xs)`` on ``xs [B, ...]``, in chunks of ``max_batchsize`` along ``B`` where
        that is smaller than ``B`` (Tianshou evaluates in chunks to bound memory)."""
        if self.max_batchsize is None or self.max_batchsize >= xs[0].shape[0]:
            return fn(*xs)
        return lax.map(lambda x: fn(*x), xs, batch_size=self.max_batchsize)

    def _returns(
        self, return_rms: RunningMeanStd, rollout: Rollout, values: Array, next_values: Array
    ) -> tuple[Array, Array, RunningMeanStd]:
        """GAE advantages and the critic's targets ``[T, N]`` from the critic's ``values`` and
        ``next_values [T, N]``, and the running return statistics updated.

        With ``return_scaling`` the critic predicts returns divided by the running return std:
        its values are scaled back up for GAE, the targets are the TD(lambda) returns divided
        by that std, and the statistics take in this batch's returns (unless those, or the
        updated statistics, are not finite). Without it the targets are the returns and the
        statistics are ``return_rms`` unchanged."""
        return_std = jnp.sqrt(return_rms.var + RETURN_SCALING_EPS)
        if self.return_scaling:
            values, next_values = values * return_std, next_values * return_std
        advantages, returns = gae(
            jnp.asarray(rollout.reward, jnp.float32),
            values,
            next_values,
            rollout.terminated,
            rollout.truncated,
            self.gamma,
            self.gae_lambda,
        )
        if not self.return_scaling:
            return advantages, returns, return_rms
        targets = returns / return_std
        # Non-finite returns (bad rewards), or finite ones so large that the variance
        # overflows (1e30**2), must not poison the running statistics.
        updated = return_rms.update(returns.reshape(-1))
        keep = all_finite(returns) & all_finite(updated)
        return_rms = tree_select(keep, updated, return_rms)
        return advantages, targets, return_rms

    def _learn(
        self, state: OnPolicyState, batch: OnPolicyBatch, key: Array
    ) -> tuple[PyTree, TrainState, dict[str, Array]]:
        """The second step of :meth:`update` (Tianshou's ``learn``): ``repeat`` passes over
        shuffled minibatches, each an actor step (:meth:`_actor_step`) then the critic's
        Adam steps; returns the actor's parameters, the critic and per-step statistics."""
        total = batch.advantage.shape[0]
        actor_apply = state.actor.apply_fn
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
                actor_params, actor_stats = self._actor_step(
                    actor_apply, actor_params, minibatch, weights, step_key
                )
            if self.critic_batch_size is None:
                critic_state, vf_loss, critic_rejected = self._critic_steps(
                    critic_state, minibatch, weights
                )
            else:
                critic_state, vf_loss, critic_rejected = self._critic_passes(
                    critic_state, minibatch, weights, critic_key
                )
            actor_stats["rejected"] = actor_stats["rejected"] + critic_rejected
            return (actor_params, critic_state), {**actor_stats, "vf_loss": vf_loss}

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

    def _summarize(self, per_step: dict[str, Array]) -> dict[str, Any]:
        stats: dict[str, Any] = {
            name: SummaryStats.from_sequence(per_step[name])
            for name in ("actor_loss", "vf_loss", "kl", "cg_residual", "cg_iterations")
        }
        stats["rejected_steps"] = jnp.sum(per_step["rejected"])
        return stats

    def _critic_steps(
        self, critic: TrainState, minibatch: OnPolicyBatch, weights: Array
    ) -> tuple[TrainState, Array, Array]:
        """``optim_critic_iters`` Adam steps; returns the critic, the last loss and the number
        of steps refused as non-finite."""

        def loss_fn(params: PyTree) -> Array:
            prediction = critic.apply_fn(params, minibatch.obs)
            return weighted_mean((minibatch.target - prediction) ** 2, weights)

        def step(critic: TrainState, _: None) -> tuple[TrainState, tuple[Array, Array]]:
            loss, grads = jax.value_and_grad(loss_fn)(critic.params)
            critic, rejected = guarded_gradient_step(critic, loss, grads)
            return critic, (loss, rejected)

        if self.optim_critic_iters == 0:
            return critic, loss_fn(critic.params), jnp.zeros((), jnp.int32)
        critic, (losses, rejected) = lax.scan(step, critic, None, length=self.optim_critic_iters)
        return critic, losses[-1], jnp.sum(rejected)

    def _critic_passes(
        self, critic: TrainState, minibatch: OnPolicyBatch, weights: Array, key: Array
    ) -> tuple[TrainState, Array, Array]:
        """``optim_critic_iters`` passes over ``minibatch`` (``weights [B]`` mask its padding)
        in shuffled minibatches of ``critic_batch_size`` (the last takes the remainder, as
        :func:`minibatch_layout` lays out the actor's), one Adam step each; returns the
        critic, the last step's loss and the number of steps refused as non-finite."""
        total = weights.shape[0]
        positions, mask = minibatch_layout(total, self.critic_batch_size)

        def step(critic: TrainState, inputs: tuple) -> tuple[TrainState, tuple[Array, Array]]:
            indices, valid = inputs
            obs, target = minibatch.obs[indices], minibatch.target[indices]
            own_weights = weights[indices] * valid

            def loss_fn(params: PyTree) -> Array:
                prediction = critic.apply_fn(params, obs)
                return weighted_mean((target - prediction) ** 2, own_weights)

            loss, grads = jax.value_and_grad(loss_fn)(critic.params)
            critic, rejected = guarded_gradient_step(critic, loss, grads)
            return critic, (loss, rejected)

        def one_pass(critic: TrainState, pass_key: Array) -> tuple[TrainState, tuple]:
            order = jax.random.permutation(pass_key, total)
            inputs = (order[jnp.asarray(positions)], jnp.asarray(mask, jnp.float32))
            return lax.scan(step, critic, inputs)

        if self.optim_critic_iters == 0:
            return self._critic_steps(critic, minibatch, weights)
        keys = jax.random.split(key, self.optim_critic_iters)
        critic, (losses, rejected) = lax.scan(one_pass, critic, keys)
        return critic, losses[-1, -1], jnp.sum(rejected)

    def _surrogate(self, log_prob: Array, minibatch: OnPolicyBatch, weights: Array) -> Array:
        """The actor's loss on a minibatch (``weights [B]`` mask padding): the subclass's."""
        raise NotImplementedError(f"{type(self).__name__} gives no actor surrogate")

    def _actor_step(
        self,
        actor_apply: Callable,
        params: PyTree,
        minibatch: OnPolicyBatch,
        weights: Array,
        key: Array,
    ) -> tuple[PyTree, dict[str, Array]]:
        """Natural-gradient direction ``d = -F^-1 g`` by CG, then the algorithm's step
        (traced at :data:`TRUST_REGION_PRECISION` by the caller).

        The steps: the surrogate's loss and gradient ``g`` at ``theta = params``
        (:func:`_surrogate_gradient`), the Fisher-vector product (:meth:`_fisher_product`),
        the direction (:func:`_natural_direction`), the subclass's step along it
        (:meth:`_step`) and the guard against non-finite steps (:func:`_guard_step`).
        ``weights [B]`` mask the minibatch's padding; ``key`` picks the FVP's subsample."""

        def surrogate_at(dist: distributions.DistributionParams) -> Array:
            log_prob = distributions.log_prob(dist, minibatch.action)
            return self._surrogate(log_prob, minibatch, weights)

        def policy(p: PyTree) -> distributions.DistributionParams:
            return actor_apply(p, minibatch.obs)

        def surrogate(p: PyTree) -> Array:
            return surrogate_at(policy(p))

        linearized, old_dist, loss, grad = _surrogate_gradient(policy, surrogate_at, params)

        def mean_kl(p: PyTree) -> Array:
            new_dist = policy(p)
            return weighted_mean(distributions.kl_divergence(old_dist, new_dist), weights)

        fvp = self._fisher_product(
            actor_apply, params, minibatch.obs, old_dist, weights, key, linearized
        )
        cg, direction, curvature = _natural_direction(fvp, grad, self.cg_iters)
        new_params, step_stats = self._step(
            ActorStep(params, direction, fvp, curvature, loss, surrogate, mean_kl)
        )
        return _guard_step(params, new_params, loss, grad, cg, step_stats, mean_kl)

    def _fisher_product(
        self,
        actor_apply: Callable,
        params: PyTree,
        obs: Array,
        old_dist: distributions.DistributionParams,
        weights: Array,
        key: Array,
        linearized: tuple[Any, Callable],
    ) -> Callable[[PyTree], PyTree]:
        """``v -> (F + damping I) v`` at ``params`` on the minibatch ``obs [B, ...]`` (with
        ``old_dist`` the policy's outputs there and ``weights [B]``), or on a subsample of
        ``fvp_batch_size`` of its samples (drawn with ``key`` in proportion to ``weights``).

        The product is in Gauss-Newton form: ``J^T M J v`` with ``J`` the Jacobian of the
        distribution parameters in ``theta`` and ``M`` the KL's Hessian in those parameters.
        This is the Hessian of the mean KL at ``theta_old`` (what Tianshou differentiates
        twice), for about half the cost per conjugate-gradient iteration. On the whole
        minibatch it reuses ``linearized`` (:func:`_surrogate_gradient`'s) as its ``J``."""
        fvp_obs, fvp_old, fvp_weights = obs, old_dist, weights
        subsample = self.fvp_batch_size is not None and self.fvp_batch_size < weights.shape[0]
        if subsample:
            subset = jax.random.choice(
                key,
                weights.shape[0],
                (self.fvp_batch_size,),
                replace=False,
                p=weights / jnp.sum(weights),
            )
            fvp_obs = fvp_obs[subset]
            fvp_old = jax.tree_util.tree_map(lambda x: x[subset], old_dist)
            fvp_weights = jnp.ones((self.fvp_batch_size,), weights.dtype)

        def output_kl(dist: distributions.DistributionParams) -> Array:
            return weighted_mean(distributions.kl_divergence(fvp_old, dist), fvp_weights)

        return make_gauss_newton_vector_product(
            lambda p: actor_apply(p, fvp_obs),
            output_kl,
            params,
            self.damping,
            linearized=None if subsample else linearized,
        )

    def _step(self, step: ActorStep) -> tuple[PyTree, dict[str, Array]]:
        """The actor's new parameters along the natural-gradient direction, and the step's
        stats (the subclass's; a ``kl`` among them is taken as the KL at the new parameters,
        which is otherwise measured)."""
        raise NotImplementedError(f"{type(self).__name__} gives no actor step")


def _flat_rollout(
    state: OnPolicyState, rollout: Rollout
) -> tuple[tuple[int, int], Array, Array, Array]:
    """A rollout's shape ``(T, N)`` (checked against the state's spaces) and its
    observations, next observations (float32, ``[B, *obs_shape]``) and actions
    (``[B, *action_shape]``), flattened time-major to ``B = T * N`` samples."""
    discrete = state.action_space.kind == "discrete"
    action_shape = () if discrete else state.action_space.shape
    obs_shape = state.observation_space.shape
    num_steps, num_envs = check_time_major(rollout, obs_shape, action_shape, discrete)
    total = num_steps * num_envs
    obs = jnp.asarray(rollout.obs, jnp.float32).reshape(total, *obs_shape)
    next_obs = jnp.asarray(rollout.next_obs, jnp.float32).reshape(total, *obs_shape)
    actions = jnp.asarray(rollout.action).reshape(total, *action_shape)
    return (num_steps, num_envs), obs, next_obs, actions


def _normalize_advantages(advantages: Array) -> Array:
    """``advantages [B]`` centered and divided by their unbiased std, as Tianshou does; a
    zero-variance batch (or a single sample) stays centered (0)."""
    total = advantages.shape[0]
    centered = advantages - jnp.mean(advantages)
    std = jnp.std(advantages, ddof=1) if total > 1 else jnp.zeros(())
    return jnp.where(std > 0, centered / jnp.where(std > 0, std, 1.0), centered)


def _surrogate_gradient(
    policy: Callable[[PyTree], distributions.DistributionParams],
    surrogate_at: Callable[[distributions.DistributionParams], Array],
    params: PyTree,
) -> tuple[tuple[Any, Callable], distributions.DistributionParams, Array, PyTree]:
    """``(linearized, old_dist, loss, grad)``: ``policy`` linearized at ``params`` (its
    outputs and ``J``, :func:`jax.linearize`), its outputs held fixed (``old_dist``), the
    surrogate's loss there and its gradient in ``params`` (a pytree like ``params``).

    One linearization of the policy at theta serves three purposes: its outputs are the old
    distribution, its transpose takes the surrogate's gradient from the gradient in the
    distribution's parameters (the chain rule, as ``jax.grad`` of the surrogate would), and it
    is the ``J`` of the Fisher-vector products. One forward pass, not three."""
    linearized = jax.linearize(policy, params)
    old_dist = jax.lax.stop_gradient(linearized[0])
    loss, dist_grad = jax.value_and_grad(surrogate_at)(old_dist)
    (grad,) = jax.linear_transpose(linearized[1], params)(dist_grad)
    return linearized, old_dist, loss, grad


def _natural_direction(
    fvp: Callable[[PyTree], PyTree], grad: PyTree, cg_iters: int
) -> tuple[ConjugateGradientResult, PyTree, Array]:
    """``(cg, direction, curvature)``: conjugate gradients' solution of ``(F + damping I) x =
    g`` (:func:`jaxrl.core.trust_region.conjugate_gradient`, with its residual and
    iterations), the direction ``d = -x`` and ``d.(F + damping I)d`` (a scalar).

    The curvature needs no other Fisher-vector product: CG tracks the residual
    ``r = g - (F + damping I) x``, and ``d = -x``, so ``d.(F + damping I)d = x.(g - r)``."""
    cg = conjugate_gradient(fvp, grad, cg_iters, CG_RESIDUAL_TOL)
    direction = otu.tree_scale(-1.0, cg.x)
    curvature = otu.tree_vdot(cg.x, otu.tree_sub(grad, cg.residual))
    return cg, direction, curvature


def _guard_step(
    params: PyTree,
    new_params: PyTree,
    loss: Array,
    grad: PyTree,
    cg: ConjugateGradientResult,
    step_stats: dict[str, Array],
    mean_kl: Callable[[PyTree], Array],
) -> tuple[PyTree, dict[str, Array]]:
    """The parameters an actor step keeps and its stats (scalars): a non-finite loss,
    gradient or step (NaN/inf anywhere) is refused, the parameters stay ``params`` and the
    refusal is counted in ``rejected``. The KL at the kept parameters is the step's own
    measure of it where ``step_stats`` has one (TRPO's line search judged the accepted
    candidate by it), else ``mean_kl`` of them; 0 for a refused step."""
    finite = jnp.isfinite(loss) & all_finite(grad) & all_finite(new_params)
    new_params = tree_select(finite, new_params, params)
    kl = step_stats.pop("kl") if "kl" in step_stats else mean_kl(new_params)
    stats = {
        "actor_loss": loss,
        "kl": jnp.where(finite, kl, 0.0),
        "cg_residual": cg.residual_sq,
        "cg_iterations": cg.iterations.astype(jnp.float32),
        "rejected": (~finite).astype(jnp.int32),
        **step_stats,
    }
    return new_params, stats
