"""Deep Deterministic Policy Gradient (Lillicrap et al. 2015), with Tianshou's semantics.

The actor ``mu(s)`` outputs actions in ``[-1, 1]`` (tanh). At collection, exploration noise is
added to ``mu(s)``; the noisy, unbounded action ``a`` is what the replay buffer stores and what
the critic learns on, while the environment receives ``map_action(bound(a))`` (clip, then scale
to ``[low, high]``). One :meth:`DDPG.update` is one Tianshou ``learn`` call on a sampled batch:

.. math::

    y = \\sum_{i < n'} \\gamma^i r_{t+i}
        + \\gamma^{n'} (1 - \\mathrm{term}_{t+n'-1}) Q'(s'_{t+n'-1}, \\mu'(s'_{t+n'-1}))

    L_Q = \\mathrm{mean}\\,(Q(s_t, a_t) - y)^2, \\qquad L_\\mu = -\\mathrm{mean}\\,Q(s_t, \\mu(s_t))

with ``n' <= n`` stopping at the first episode end (see :func:`jaxrl.core.nstep_targets`). The
critic takes an Adam step on ``L_Q``, then the actor one on ``L_mu`` through the updated critic,
then both target networks are soft-updated: ``theta' <- tau * theta + (1 - tau) * theta'``.
Each of these steps, and the exploration and warm-up below, is a function of
:mod:`jaxrl.algorithms.off_policy` that siblings reuse (``examples/td3.py``: TD3 in one file).

Exploration noise is a small frozen pytree (:class:`GaussianNoise`, :class:`OUNoise`) whose
parameters are leaves (vmappable). Ornstein-Uhlenbeck noise has a state, kept in
:attr:`DDPGState.noise_state`; every call that adds noise therefore returns the new train state:
``state, sample = agent.explore(state, obs, key)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import flax.linen as nn
import jax
import jax.numpy as jnp
from flax import struct
from flax.training.train_state import TrainState

from jaxrl.algorithms import off_policy
from jaxrl.algorithms._common import (
    Schedule,
    accept_aliases,
    action_bounds,
    check_bounds,
    check_spaces,
    check_state,
    check_structure,
    document_fields,
    hyperparameter,
    new_train_state,
    observations,
    to_env_action,
)
from jaxrl.algorithms.noise import GaussianNoise, Noise, OUNoise
from jaxrl.algorithms.protocol import ActionSample, LearningMode
from jaxrl.core._checks import check_int, check_key
from jaxrl.networks import Activation, DeterministicActor, QCritic
from jaxrl.replay import NStepBatch, ReplayBuffer, Transition
from jaxrl.spaces import SpaceSpec

Array = jax.Array
PyTree = Any


def _resolve_noise(noise: Any) -> Noise | None:
    if isinstance(noise, str) and noise == "default":
        return GaussianNoise(sigma=0.1)
    # type(noise) is object: the placeholder leaves JAX passes while rebuilding the pytree
    if noise is None or isinstance(noise, GaussianNoise | OUNoise) or type(noise) is object:
        return noise
    got = repr(noise) if isinstance(noise, str) else type(noise).__name__
    raise (ValueError if isinstance(noise, str) else TypeError)(
        f"DDPG.exploration_noise must be 'default', a GaussianNoise, an OUNoise or None, got {got}"
    )


# ---------------------------------------------------------------------------------------------
# State
# ---------------------------------------------------------------------------------------------


class DDPGState(struct.PyTreeNode):
    """Everything DDPG learns and carries (a pytree).

    Attributes:
      actor: ``TrainState`` of ``mu`` with its Adam state; ``actor.step`` counts actor steps.
      critic: ``TrainState`` of ``Q`` with its Adam state.
      actor_target: the target actor's parameters ``mu'``.
      critic_target: the target critic's parameters ``Q'``.
      noise_state: exploration-noise state, ``[*batch_shape, action_dim]`` (OU's ``x``; unused
        zeros for Gaussian noise). ``batch_shape`` is ``(num_envs,)`` given to :meth:`DDPG.init`.
      action_low: the Box's lower bounds ``[action_dim]``, for action mapping.
      action_high: its upper bounds ``[action_dim]``.
      num_updates: number of ``update`` calls so far (drives the learning-rate schedules).
      observation_space: static description of the observation space.
      action_space: static description of the action space.
    """

    actor: TrainState
    critic: TrainState
    actor_target: PyTree
    critic_target: PyTree
    noise_state: Array
    action_low: Array
    action_high: Array
    num_updates: Array
    observation_space: SpaceSpec = struct.field(pytree_node=False)
    action_space: SpaceSpec = struct.field(pytree_node=False)


# ---------------------------------------------------------------------------------------------
# Algorithm
# ---------------------------------------------------------------------------------------------


@accept_aliases({"estimation_step": "n_step_return_horizon"})
@document_fields
class DDPG(struct.PyTreeNode):
    """Deep Deterministic Policy Gradient: a frozen pytree of hyperparameters with jittable
    methods.

    Numeric hyperparameters are pytree leaves (``jax.vmap`` can sweep them); fields that fix
    shapes or control flow are static. Tianshou 2.x names; the 1.x name ``estimation_step`` is
    accepted as a keyword alias of ``n_step_return_horizon``. Learning rates, batch size and
    buffer size default to Tianshou's DDPG test (Pendulum).

    Each field's description is its ``help`` metadata (also the command line's help), listed
    below.
    """

    learning_mode: ClassVar[LearningMode] = "off_policy"
    evaluates_both_modes: ClassVar[bool] = False  # the actor without noise only
    batches_seeds_on_cpu: ClassVar[bool] = True  # small loop-free updates batch well

    tau: float | Array = hyperparameter(
        0.005, "soft-update weight of the target networks, in [0, 1]", low=0.0, high=1.0
    )
    gamma: float | Array = hyperparameter(0.99, "discount factor in [0, 1]", low=0.0, high=1.0)
    actor_lr: float | Array = hyperparameter(
        1e-4, "actor Adam learning rate (Tianshou test: 1e-4)", low=0.0
    )
    critic_lr: float | Array = hyperparameter(
        1e-3, "critic Adam learning rate (Tianshou test: 1e-3)", low=0.0
    )
    exploration_noise: Noise | Literal["default"] | None = hyperparameter(
        "default",
        '"default" (GaussianNoise(sigma=0.1), Tianshou 1.x), a GaussianNoise, an OUNoise, or '
        "None (no noise). Its parameters are leaves; the noise is added in [-1, 1]-action space",
    )
    n_step_return_horizon: int = hyperparameter(
        1, "n of the n-step critic targets (Tianshou estimation_step)", static=True, low=1
    )
    batch_size: int = hyperparameter(
        128, "transitions per update (sample_batch)", static=True, low=1
    )
    buffer_size: int = hyperparameter(
        20000,
        "total replay capacity over all environments (Tianshou's "
        "VectorReplayBuffer(buffer_size, num_envs); init_buffer)",
        static=True,
        low=1,
    )
    warmup_steps: int = hyperparameter(
        0,
        "environment steps (over all envs) of uniformly random actions before the policy acts "
        "(Tianshou's start_timesteps; 0 in its Pendulum test); see explore",
        static=True,
        low=0,
    )
    update_per_step: float = hyperparameter(
        0.125,
        "gradient steps per environment step collected (Tianshou's trainer update_per_step; "
        "its test: 8 envs, collect 8 steps, 0.125 -> 1 update per collect). Read by training "
        "loops",
        static=True,
        low=0.0,
        low_open=True,
    )
    action_scaling: bool = hyperparameter(
        True, "scale bounded actions from [-1, 1] to the action space's [low, high]", static=True
    )
    action_bound_method: Literal["clip"] | None = hyperparameter(
        "clip",
        "bound raw actions before scaling: clip or None (the actor is already tanh-bounded)",
        static=True,
    )
    actor_lr_schedule: Schedule | None = hyperparameter(
        None,
        "optional update_count -> multiplier of actor_lr (Tianshou's lr_scheduler, stepped "
        "once per update)",
        static=True,
    )
    critic_lr_schedule: Schedule | None = hyperparameter(
        None,
        "optional update_count -> multiplier of critic_lr (Tianshou's lr_scheduler, stepped "
        "once per update)",
        static=True,
    )
    hidden_sizes: Sequence[int] = hyperparameter(
        (128, 128),
        "hidden layer sizes of the actor and critic MLPs (Tianshou's Net: [128, 128])",
        static=True,
    )
    activation: Activation = hyperparameter("relu", "activation of the hidden layers", static=True)
    actor_network: nn.Module | None = hyperparameter(
        None, "optional Flax module (obs -> action in [-1, 1]) used instead", static=True
    )
    critic_network: nn.Module | None = hyperparameter(
        None, "optional Flax module ((obs, action) -> Q) used instead", static=True
    )

    # ------------------------------------------------------------------ validation
    def __post_init__(self) -> None:
        object.__setattr__(self, "exploration_noise", _resolve_noise(self.exploration_noise))
        check_bounds(self)
        check_structure(self)

    # ------------------------------------------------------------------ construction
    def networks(self, action_dim: int) -> tuple[nn.Module, nn.Module]:
        """``(actor, critic)`` Flax modules: ``obs -> mu(s) [..., A]`` and ``(obs, action) ->
        Q [...]`` (``actor_network``/``critic_network`` where given). :meth:`init` builds the
        train states from them; a sibling changes its networks here (TD3: twin critics)."""
        actor = self.actor_network or DeterministicActor(
            action_dim=action_dim,
            hidden_sizes=tuple(self.hidden_sizes),
            activation=self.activation,
        )
        critic = self.critic_network or QCritic(
            hidden_sizes=tuple(self.hidden_sizes), activation=self.activation
        )
        return actor, critic

    def init(
        self,
        key: Array,
        observation_space: Any,
        action_space: Any,
        num_envs: int | None = None,
    ) -> DDPGState:
        """Initialize networks (targets as copies), optimizers and the noise state.

        Args:
          key: PRNG key.
          observation_space: a gymnasium or gymnax ``Box``.
          action_space: a gymnasium or gymnax 1-D ``Box`` (DDPG is continuous-only).
          num_envs: number of parallel environments acted for: the noise state gets shape
            ``[num_envs, action_dim]`` (``[action_dim]`` when None, for unbatched acting).
            Only OU noise needs it to match the actions; see :meth:`reset_noise`.
        """
        check_key(f"{type(self).__name__}.init: key", key)
        obs_space, act_space = check_spaces(
            observation_space, action_space, type(self).__name__, discrete=False
        )
        check_int("DDPG.init num_envs", num_envs, low=1, optional=True)
        low, high = action_bounds(act_space, self.action_scaling)
        action_dim = act_space.shape[0]
        actor_module, critic_module = self.networks(action_dim)
        actor_key, critic_key = jax.random.split(key)
        dummy_obs = jnp.zeros((1, *obs_space.shape), jnp.float32)
        dummy_action = jnp.zeros((1, action_dim), jnp.float32)
        actor = new_train_state(actor_module, actor_key, (dummy_obs,), self.actor_lr)
        critic = new_train_state(
            critic_module, critic_key, (dummy_obs, dummy_action), self.critic_lr
        )
        batch_shape = () if num_envs is None else (int(num_envs),)
        return DDPGState(
            actor=actor,
            critic=critic,
            actor_target=jax.tree_util.tree_map(jnp.array, actor.params),
            critic_target=jax.tree_util.tree_map(jnp.array, critic.params),
            noise_state=jnp.zeros((*batch_shape, action_dim), jnp.float32),
            action_low=low,
            action_high=high,
            num_updates=jnp.zeros((), jnp.int32),
            observation_space=obs_space,
            action_space=act_space,
        )

    def init_buffer(self, state: DDPGState, num_envs: int) -> ReplayBuffer:
        """An empty :class:`jaxrl.replay.ReplayBuffer` for ``num_envs`` environments holding
        ``buffer_size // num_envs`` steps each (Tianshou's ``VectorReplayBuffer``)."""
        check_int("DDPG.init_buffer num_envs", num_envs, low=1)
        capacity = self.buffer_size // num_envs
        if capacity < 1:
            raise ValueError(
                f"DDPG.buffer_size={self.buffer_size} is smaller than num_envs={num_envs}"
            )
        obs = jnp.zeros((num_envs, *state.observation_space.shape), jnp.float32)
        flags = jnp.zeros((num_envs,), bool)
        example = Transition(
            obs=obs,
            action=jnp.zeros((num_envs, *state.action_space.shape), jnp.float32),
            reward=jnp.zeros((num_envs,), jnp.float32),
            terminated=flags,
            truncated=flags,
            next_obs=obs,
        )
        return ReplayBuffer.create(capacity, example)

    def sample_batch(self, buffer: ReplayBuffer, key: Array) -> NStepBatch:
        """``buffer.sample(key, batch_size, n_step_return_horizon)``: an update's input."""
        return buffer.sample(key, self.batch_size, self.n_step_return_horizon)

    def reset_noise(
        self, state: DDPGState, batch_shape: tuple[int, ...] | None = None
    ) -> DDPGState:
        """Reset the noise state to 0 (Tianshou's ``noise.reset()``), optionally with a new
        batch shape (e.g. ``(num_envs,)``); the state's structure changes with its shape."""
        shape = state.noise_state.shape[:-1] if batch_shape is None else tuple(batch_shape)
        return state.replace(
            noise_state=jnp.zeros((*shape, state.noise_state.shape[-1]), jnp.float32)
        )

    # ------------------------------------------------------------------ acting
    @property
    def evaluates_deterministically(self) -> bool:
        """DDPG evaluates without noise (Tianshou's test collector adds none)."""
        return True

    def explore(
        self, state: DDPGState, obs: Array, key: Array, env_steps: Array | None = None
    ) -> tuple[DDPGState, ActionSample]:
        """Training actions for ``obs [..., *obs_shape]``: ``mu(s)`` plus exploration noise,
        or uniform random ones while ``env_steps < warmup_steps`` (Tianshou's
        ``start_timesteps``; ``env_steps`` None: past the warm-up).

        Returns:
          ``(state, ActionSample(action, env_action))``: the state with the advanced noise
          state (unchanged for Gaussian noise or no noise), the raw noisy action ``[..., A]``
          to store (unbounded), and the bounded, scaled action for the environment.
        """
        act_key, random_key = jax.random.split(key)
        state, sample = self._actions(state, obs, act_key, False)
        if self.warmup_steps > 0 and env_steps is not None:
            shape = (*obs.shape[:1], *state.action_space.shape)
            action = off_policy.uniform_actions(random_key, shape)
            random = ActionSample(action=action, env_action=to_env_action(state, action, self))
            sample = off_policy.warmup_actions(sample, random, env_steps, self.warmup_steps)
        return state, sample

    def policy(
        self, state: DDPGState, obs: Array, key: Array, deterministic: bool | Array
    ) -> Array:
        """Environment actions for ``obs``: ``mu(s)``, bounded and scaled; with
        ``deterministic=False`` (a bool, may be traced) exploration noise is added (the noise
        state's advance is dropped: use :meth:`explore` to carry it)."""
        return self._actions(state, obs, key, deterministic)[1].env_action

    def _actions(
        self, state: DDPGState, obs: Array, key: Array, deterministic: bool | Array
    ) -> tuple[DDPGState, ActionSample]:
        obs = observations(state, obs, type(self).__name__, DDPGState)
        action = state.actor.apply_fn(state.actor.params, obs)
        action, noise_state = off_policy.add_exploration_noise(
            self.exploration_noise, state.noise_state, action, key, deterministic
        )
        state = state.replace(noise_state=noise_state)
        return state, ActionSample(action=action, env_action=to_env_action(state, action, self))

    def init_training(
        self, key: Array, observation_space: Any, action_space: Any, num_envs: int
    ) -> tuple[DDPGState, ReplayBuffer]:
        """:meth:`init` for ``num_envs`` environments and an empty :meth:`init_buffer`."""
        state = self.init(key, observation_space, action_space, num_envs)
        return state, self.init_buffer(state, num_envs)

    # ------------------------------------------------------------------ learning
    def critic_targets(
        self, state: DDPGState, batch: NStepBatch, key: Array | None = None
    ) -> Array:
        """n-step targets ``y [B]`` from the target networks (no gradient), bootstrapping
        from ``Q'(s', mu'(s'))`` (:func:`jaxrl.algorithms.off_policy.nstep_critic_targets`).
        ``key`` is unused (DDPG's targets are deterministic; TD3's add noise)."""
        del key
        actor_apply, critic_apply = state.actor.apply_fn, state.critic.apply_fn

        def next_q(next_obs: Array) -> Array:
            next_action = actor_apply(state.actor_target, next_obs)
            return critic_apply(state.critic_target, next_obs, next_action)

        return off_policy.nstep_critic_targets(batch, next_q, self.gamma)

    def check_batch(self, state: DDPGState, batch: NStepBatch) -> None:
        """Raise naming the field unless ``batch`` fits ``state`` 's spaces and the horizon
        (:func:`jaxrl.algorithms.off_policy.check_batch`; static, so it runs under ``jit``)."""
        check_state(f"{type(self).__name__}.update", state, DDPGState)
        obs_shape, action_shape = state.observation_space.shape, state.action_space.shape
        off_policy.check_batch(batch, obs_shape, action_shape, self.n_step_return_horizon)

    def with_learning_rates(self, state: DDPGState) -> DDPGState:
        """``state`` whose optimizers step with this update's (scheduled) learning rates."""
        count = state.num_updates
        return state.replace(
            actor=off_policy.with_scheduled_lr(
                state.actor, self.actor_lr, self.actor_lr_schedule, count
            ),
            critic=off_policy.with_scheduled_lr(
                state.critic, self.critic_lr, self.critic_lr_schedule, count
            ),
        )

    def update(
        self, state: DDPGState, batch: NStepBatch, key: Array
    ) -> tuple[DDPGState, dict[str, Array]]:
        """One DDPG learning step (Tianshou's ``learn``) on a sampled batch.

        Args:
          state: the train state.
          batch: an :class:`jaxrl.replay.NStepBatch` with ``B`` samples and windows of
            ``n = n_step_return_horizon`` steps (:meth:`sample_batch`).
          key: PRNG key (unused: DDPG's update is deterministic; kept for a uniform API).

        Returns:
          ``(new_state, {"actor_loss": L_mu, "critic_loss": L_Q, "rejected_steps": r})``,
          scalars; ``L_Q`` is measured before the critic step, ``L_mu`` before the actor step
          (Tianshou's logs); ``r`` counts critic/actor steps refused because their loss,
          gradients or new parameters were non-finite (those networks keep their parameters).
        """
        self.check_batch(state, batch)
        obs = jnp.asarray(batch.obs, jnp.float32)
        action = jnp.asarray(batch.action, jnp.float32)
        targets = self.critic_targets(state, batch, key)
        state = self.with_learning_rates(state)
        # A non-finite loss or step (e.g. NaN rewards in the batch) is refused and counted.
        critic, critic_loss, critic_rejected = off_policy.critic_step(
            state.critic, obs, action, targets
        )
        actor, actor_loss, actor_rejected = off_policy.actor_step(
            state.actor, off_policy.q_function(critic), obs
        )
        new_state = off_policy.soft_update_targets(
            state.replace(actor=actor, critic=critic, num_updates=state.num_updates + 1),
            self.tau,
        )
        stats = {
            "actor_loss": actor_loss,
            "critic_loss": critic_loss,
            "rejected_steps": critic_rejected + actor_rejected,
        }
        return new_state, stats
