"""TD3 (Fujimoto et al. 2018) as a plug-in: the worked example of adding an algorithm.

TD3 is DDPG with three changes, each a few lines on :mod:`jaxrl.algorithms.off_policy` (the
pieces DDPG's own update is built from), with Tianshou's semantics:

- twin critics ``Q_1, Q_2``: one stacked :class:`jaxrl.networks.Ensemble` (``Q [2, B]``);
- target policy smoothing: ``y = r + gamma (1 - term) min_i Q'_i(s', mu'(s') + eps)``,
  ``eps = clip(policy_noise * N(0, 1), +-noise_clip)`` (n-step as DDPG's; as in Tianshou, the
  smoothed action is not clipped to [-1, 1]);
- delayed updates: the actor step (through ``Q_1``) and the soft updates of all targets on
  every ``policy_delay``-th update only (Tianshou's ``update_actor_freq``).

Registering it (the last line) is all the drivers and the command need. It takes DDPG's
presets (Tianshou's TD3 test uses DDPG's settings), with its own actor learning rate on
Pendulum: ``jaxrl train td3 --plugin examples/td3.py --env Pendulum-v1``. In Python,
``jaxrl.load_plugin("examples/td3.py")`` registers it: ``registry.get("td3").cls``.
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxrl.algorithms import check_field, check_int_field, document_fields, hyperparameter
from jaxrl.algorithms import off_policy as op
from jaxrl.algorithms.ddpg import DDPG, DDPGState
from jaxrl.algorithms.registry import AlgorithmInfo, register
from jaxrl.networks import Ensemble
from jaxrl.replay import NStepBatch


@document_fields
class TD3(DDPG):
    """Twin Delayed DDPG: DDPG's fields and defaults, and three of its own."""

    policy_noise: float | jax.Array = hyperparameter(0.2, "std of the target smoothing noise")
    noise_clip: float | jax.Array = hyperparameter(0.5, "bound of that noise (inf: none)")
    policy_delay: int = hyperparameter(2, "critic updates per actor update", static=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_field("TD3", "policy_noise", self.policy_noise, 0.0, float("inf"))
        check_field("TD3", "noise_clip", self.noise_clip, 0.0, float("inf"), low_open=True)
        check_int_field("TD3", "policy_delay", self.policy_delay, 1)

    def networks(self, action_dim: int) -> tuple[nn.Module, nn.Module]:
        actor, critic = super().networks(action_dim)
        return actor, Ensemble(critic, size=2)  # (obs, action) -> Q [2, B]

    def critic_targets(self, state: DDPGState, batch: NStepBatch, key: jax.Array) -> jax.Array:
        def smoothed_min_q(next_obs: jax.Array) -> jax.Array:
            action = state.actor.apply_fn(state.actor_target, next_obs)
            eps = self.policy_noise * jax.random.normal(key, action.shape)
            action = action + jnp.clip(eps, -self.noise_clip, self.noise_clip)
            return jnp.min(state.critic.apply_fn(state.critic_target, next_obs, action), axis=0)

        return op.nstep_critic_targets(batch, smoothed_min_q, self.gamma)

    def update(self, state: DDPGState, batch: NStepBatch, key: jax.Array) -> tuple[DDPGState, dict]:
        """One TD3 step: both critics, then (every ``policy_delay``-th) actor and targets."""
        self.check_batch(state, batch)
        obs, action = jnp.asarray(batch.obs, jnp.float32), jnp.asarray(batch.action, jnp.float32)
        targets = self.critic_targets(state, batch, key)
        state = self.with_learning_rates(state)
        critic, q_losses, q_rejected = op.critic_step(state.critic, obs, action, targets)
        q1 = op.q_function(critic, index=0)
        actor, actor_loss, actor_rejected = op.actor_step(state.actor, q1, obs)
        state, delayed = state.replace(critic=critic), state.num_updates % self.policy_delay == 0
        stepped = op.soft_update_targets(state.replace(actor=actor), self.tau)
        state = op.select_tree(delayed, stepped, state)  # actor and targets, or neither
        rejected = q_rejected + jnp.where(delayed, actor_rejected, 0)
        stats = {"actor_loss": actor_loss, "critic1_loss": q_losses[0]}
        stats |= {"critic2_loss": q_losses[1], "rejected_steps": rejected}
        return state.replace(num_updates=state.num_updates + 1), stats


PRESETS = {"pendulum": {"actor_lr": 1e-3}}  # over DDPG's (Tianshou's TD3 test: 1e-4; can stall)
register(AlgorithmInfo("td3", TD3, "TD3 (Twin Delayed DDPG)", presets_like="ddpg", presets=PRESETS))
