"""TD3 (Fujimoto et al. 2018) as a plug-in, the worked example of adding an algorithm: DDPG
with twin critics (one :class:`jaxrl.networks.Ensemble`, ``Q [2, B]``), target smoothing
(``min_i Q'_i(s', mu'(s') + clip(policy_noise N(0, 1), +-noise_clip))``) and the actor step
through ``Q_1`` with the soft updates on every ``policy_delay``-th update only (vmapped seeds
too: :func:`jaxrl.core.apply_if`), in Tianshou's semantics. The last line registers it
for the drivers and ``jaxrl train td3 --plugin examples/td3.py``; it takes DDPG's presets."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxrl.algorithms import document_fields, hyperparameter
from jaxrl.algorithms import off_policy as op
from jaxrl.algorithms.ddpg import DDPG, DDPGState
from jaxrl.algorithms.registry import AlgorithmInfo, register
from jaxrl.core.tree import apply_if
from jaxrl.networks import Ensemble
from jaxrl.replay import NStepBatch


class TD3State(DDPGState):
    actor_loss: jax.Array  # of the last actor step (logged between them, as Tianshou does)


@document_fields
class TD3(DDPG):
    """Twin Delayed DDPG: DDPG's fields and defaults, and three of its own."""

    policy_noise: float | jax.Array = hyperparameter(
        0.2, "std of the target smoothing noise", low=0.0
    )
    noise_clip: float | jax.Array = hyperparameter(
        0.5, "bound of that noise (inf: none)", low=0.0, low_open=True
    )
    policy_delay: int = hyperparameter(2, "critic updates per actor update", static=True, low=1)

    def networks(self, action_dim: int) -> tuple[nn.Module, Ensemble]:
        actor, critic = super().networks(action_dim)
        return actor, Ensemble(critic, size=2)  # (obs, action) -> Q [2, B]

    def init(self, *args, **kwargs) -> TD3State:
        return TD3State(**vars(super().init(*args, **kwargs)), actor_loss=jnp.float32(jnp.nan))

    def critic_targets(self, state: DDPGState, batch: NStepBatch, key: jax.Array) -> jax.Array:
        def smoothed_min_q(next_obs: jax.Array) -> jax.Array:
            action = state.actor.apply_fn(state.actor_target, next_obs)
            eps = self.policy_noise * jax.random.normal(key, action.shape)
            action = action + jnp.clip(eps, -self.noise_clip, self.noise_clip)
            return jnp.min(state.critic.apply_fn(state.critic_target, next_obs, action), axis=0)

        return op.nstep_critic_targets(batch, smoothed_min_q, self.gamma)

    def update(self, state: TD3State, batch: NStepBatch, key: jax.Array) -> tuple[TD3State, dict]:
        """One TD3 step: both critics, then (every ``policy_delay``-th) actor and targets."""
        self.check_batch(state, batch)
        obs, action = jnp.asarray(batch.obs, jnp.float32), jnp.asarray(batch.action, jnp.float32)
        targets = self.critic_targets(state, batch, key)
        state = self.with_learning_rates(state)
        critic, q_losses, q_rejected = op.critic_step(state.critic, obs, action, targets)
        q1 = self.networks(action.shape[-1])[1].member(critic.params, 0)  # (obs, a) -> Q_1 [B]

        def actor_and_targets(state: TD3State, _: jax.Array) -> tuple[TD3State, jax.Array]:
            actor, actor_loss, rejected = op.actor_step(state.actor, q1, obs)
            state = state.replace(actor=actor, actor_loss=actor_loss)
            return op.soft_update_targets(state, self.tau), rejected

        delayed = state.num_updates % self.policy_delay == 0
        state = state.replace(critic=critic, num_updates=state.num_updates + 1)
        state, actor_rejected = apply_if(delayed, actor_and_targets, state, q_rejected * 0)
        stats = {"actor_loss": state.actor_loss, "critic1_loss": q_losses[0]}
        stats |= {"critic2_loss": q_losses[1], "rejected_steps": q_rejected + actor_rejected}
        return state, stats


PRESETS = {"pendulum": {"actor_lr": 1e-3}}  # over DDPG's (Tianshou's TD3 test: 1e-4; can stall)
register(AlgorithmInfo("td3", TD3, "TD3 (Twin Delayed DDPG)", presets_like="ddpg", presets=PRESETS))
