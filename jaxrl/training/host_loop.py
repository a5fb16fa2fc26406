"""The host driver's :class:`jaxrl.training.loop.Loop`: a run on gymnasium or EnvPool
environments, trained period by period by :class:`jaxrl.training.gymnasium_driver.HostTrainLoop`."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import numpy as np

from jaxrl.envs.host import make_host_env
from jaxrl.training.agent_steps import is_off_policy
from jaxrl.training.evaluation import evaluate_gymnasium
from jaxrl.training.gymnasium_driver import HostCarry, HostTrainLoop, init_host_carry
from jaxrl.training.settings import RunSettings
from jaxrl.training.sharding import SeedPlacement


class HostLoop:
    """The host driver's :class:`jaxrl.training.loop.Loop`: a run of one setting on gymnasium
    or EnvPool environments (:class:`~jaxrl.training.gymnasium_driver.HostTrainLoop` between
    ``start`` and ``close``).

    The checkpoint is ``{"carry": HostCarry}`` (agent states, observation statistics and,
    unless ``settings.checkpoint_buffer`` is off, the replay buffers); a resumed run
    continues on fresh environments, seeded ``seed + start_steps + i``.

    Args:
      agent: the algorithm object.
      env_id: a gymnasium id (or one EnvPool has).
      settings: the run's settings (its seeds, shape, evaluation, environment backend).
    """

    num_settings = 1

    def __init__(self, agent: Any, env_id: str, settings: RunSettings) -> None:
        self.agent, self.env_id, self.settings = agent, env_id, settings
        self.layout = settings.driver_settings.layout
        self._loop: HostTrainLoop | None = None

    def _seeds(self, offset: int = 0) -> list[int]:
        return [self.settings.seed + offset + i for i in range(self.settings.num_seeds)]

    def _carry(self, abstract: bool) -> HostCarry:
        """A fresh carry (its shapes when ``abstract``), for the spaces of the environments
        the run uses (EnvPool's and gymnasium's may differ in dtype)."""
        settings = self.settings
        env = make_host_env(self.env_id, 1, settings.seed, settings.env_backend)
        spaces = env.single_observation_space, env.single_action_space
        env.close()

        def make() -> HostCarry:
            return init_host_carry(
                self.agent, self._seeds(), *spaces, settings.num_envs, settings.normalize_obs
            )

        return jax.eval_shape(make) if abstract else make()

    def check(self) -> None:
        self.checkpoint_template()

    def checkpoint_template(self) -> Any:
        return self.to_checkpoint(self._carry(abstract=True))

    def init(self) -> HostCarry:
        return SeedPlacement().put(self._carry(abstract=False))

    def to_checkpoint(self, carry: HostCarry) -> Any:
        if not self.settings.checkpoint_buffer:
            carry = carry._replace(buffer=None)
        return {"carry": carry}

    def from_checkpoint(self, tree: Any) -> HostCarry:
        return tree["carry"]

    def start(self, carry: HostCarry, start_steps: int) -> HostCarry:
        if carry.buffer is None and is_off_policy(self.agent):
            # A checkpoint without its replay buffer (``checkpoint_buffer`` off).
            carry = carry._replace(buffer=self._carry(abstract=False).buffer)
        carry = SeedPlacement().put(carry)
        remaining = self.layout.total_steps - start_steps
        if remaining > 0:
            settings = dataclasses.replace(self.settings.driver_settings, total_steps=remaining)
            # A resumed run continues on fresh environments and keys; the loop counts on
            # from start_steps: a warm-up already done is not run again.
            self._loop = HostTrainLoop(
                self.agent,
                self.env_id,
                settings,
                self._seeds(offset=start_steps),
                self.settings.env_backend,
                start_steps=start_steps,
            )
        return carry

    def run_period(self, carry: HostCarry, collections: int) -> tuple[HostCarry, dict]:
        if self._loop is None:
            raise RuntimeError("the run has no evaluation period left")
        carry, metrics = self._loop.run_period(carry, collections)
        return carry, jax.device_get(metrics)

    def evaluate(
        self, state: Any, obs_stats: Any, episodes: int, seed: int, deterministic: bool
    ) -> np.ndarray:
        returns = evaluate_gymnasium(
            self.agent,
            state,
            self.env_id,
            obs_stats,
            episodes,
            seed,
            env_backend=self.settings.env_backend,
            num_seeds=self.settings.num_seeds,
            deterministic=bool(deterministic),
        )
        return np.asarray(returns, np.float64)

    def part(self, tree: Any, g: int) -> Any:
        del g
        return tree

    def close(self) -> None:
        if self._loop is not None:
            self._loop.close()
            self._loop = None
