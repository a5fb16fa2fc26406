"""What every algorithm offers the training drivers: one typed protocol.

Drivers (:mod:`jaxrl.training`) use only these members, never the concrete class, so a new
algorithm needs its own module and a registry entry (:mod:`jaxrl.algorithms.registry`) and
nothing else. Run shape by learning mode:

- ``"on_policy"``: ``update(state, rollout, key)`` learns from each fresh
  :class:`jaxrl.Rollout` (``[T, N]``); the driver's ``num_envs x num_steps`` is the batch.
- ``"off_policy"``: transitions go to the replay buffer ``init_training`` returns;
  ``update_per_step`` updates per collected env step follow, each on
  ``sample_batch(buffer, key)``, none before ``warmup_steps`` env steps.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

import jax
from flax import struct

Array = jax.Array
LearningMode = Literal["on_policy", "off_policy"]


class ActionSample(struct.PyTreeNode):
    """``action``: the raw policy action (store it in rollouts); ``env_action``: bounded and
    scaled for the environment."""

    action: Array
    env_action: Array


# What a driver must know of an agent, as named capabilities. An algorithm class may declare
# each as a ClassVar bool; otherwise it follows from its learning mode (these functions and
# the registry are the only places that read ``learning_mode``).


def learns_from_replay(agent: Agent) -> bool:
    """Whether the agent learns from a replay buffer (``init_training`` returns one, and
    off-policy updates follow each collection) rather than from each fresh rollout."""
    return agent.learning_mode == "off_policy"


def evaluates_both_modes(agent: Agent) -> bool:
    """Whether the agent has a stochastic policy of its own besides the deterministic one
    (NPG/TRPO sample from their action distribution), so the final policy is evaluated in
    both modes and ``policy`` takes a traced ``deterministic`` flag; default: on-policy
    agents."""
    return bool(getattr(agent, "evaluates_both_modes", agent.learning_mode == "on_policy"))


def batches_seeds_on_cpu(agent: Agent) -> bool:
    """Whether several seeds of the agent run faster batched (``jax.vmap``) than one after
    another on a CPU (:func:`jaxrl.training.over_seeds`); default: off-policy agents (NPG and
    TRPO's conjugate-gradient and line-search loops run slower batched)."""
    return bool(getattr(agent, "batches_seeds_on_cpu", agent.learning_mode == "off_policy"))


def update_loops(agent: Agent, batch: int) -> dict[str, int]:
    """The bounds of the loops one ``update`` runs one after another, by name, for a
    collected batch of ``batch`` transitions (NPG/TRPO: actor steps, conjugate-gradient and
    line-search iterations per actor step); empty for an agent that declares none. Under
    ``vmap`` a while loop runs to its batch's maximum, so the bounds predict the time."""
    loops = getattr(agent, "update_loops", None)
    return {} if loops is None else dict(loops(batch))


@runtime_checkable
class Agent(Protocol):
    """An algorithm object (a frozen pytree of hyperparameters with jittable methods)."""

    learning_mode: ClassVar[LearningMode]

    @property
    def evaluates_deterministically(self) -> bool:
        """Whether evaluation acts with the policy's mode (no sampling, no noise)."""
        ...

    def init_training(
        self, key: Array, observation_space: Any, action_space: Any, num_envs: int
    ) -> tuple[Any, Any]:
        """``(state, buffer)``: the train state and, off-policy, an empty replay buffer
        (None on-policy)."""
        ...

    def explore(
        self, state: Any, obs: Array, key: Array, env_steps: Array
    ) -> tuple[Any, ActionSample]:
        """Training actions for ``obs [N, ...]`` after ``env_steps`` env steps (sampled,
        noisy, or random during a warm-up): ``(state, ActionSample)``."""
        ...

    def policy(self, state: Any, obs: Array, key: Array, deterministic: Any) -> Array:
        """Environment actions for ``obs`` (evaluation and deployment)."""
        ...

    def update(self, state: Any, data: Any, key: Array) -> tuple[Any, dict[str, Any]]:
        """One learning step on a rollout (on-policy) or a sampled batch (off-policy)."""
        ...


def check_agent(agent: Any) -> None:
    """``TypeError`` unless ``agent`` follows :class:`Agent` (an algorithm object), naming
    what was given instead (a driver's first check: an algorithm's name is no agent)."""
    if not isinstance(agent, Agent):
        raise TypeError(
            "agent must be an algorithm object (jaxrl.NPG(), jaxrl.TRPO(), jaxrl.DDPG(), or "
            f"one following jaxrl.algorithms.protocol.Agent), got {type(agent).__name__} "
            f"{agent!r:.80}"
        )


@runtime_checkable
class OffPolicyAgent(Agent, Protocol):
    """An off-policy agent: the run-shape fields and the batch sampler its drivers need."""

    update_per_step: float
    warmup_steps: int

    def sample_batch(self, buffer: Any, key: Array) -> Any:
        """An update's input drawn from the replay buffer."""
        ...
