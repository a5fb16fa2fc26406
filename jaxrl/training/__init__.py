"""Training drivers: a run's training is a :class:`~jaxrl.training.loop.Loop`
(:class:`~jaxrl.training.jax_loop.JaxLoop` on JAX environments, whole runs as compiled
programs; :class:`~jaxrl.training.gymnasium_driver.HostLoop` on gymnasium and EnvPool), and the
collectors research code builds its own loop from (:func:`make_collector`,
:mod:`jaxrl.training.collect`). A policy's evaluation is :func:`jaxrl.evaluate_policy`
(the drivers' own, :mod:`jaxrl.training.evaluation`, is theirs)."""

from jaxrl.training.collect import (
    CollectorState,
    HostCollector,
    JaxCollector,
    make_collector,
)
from jaxrl.training.gymnasium_driver import HostLoop
from jaxrl.training.jax_driver import (
    TrainCarry,
    TrainConfig,
    TrainLoop,
    checked_call,
    make_env,
    make_train,
    make_train_loop,
)
from jaxrl.training.jax_loop import JaxLoop, train_until
from jaxrl.training.loop import Loop
from jaxrl.training.seeds import SeedAxis, over_seeds, resolve_seed_axis
from jaxrl.training.sharding import (
    SeedPlacement,
    gather_seeds,
    initialize_distributed,
    seed_mesh,
    train_sharded,
)

__all__ = [
    "CollectorState",
    "HostCollector",
    "HostLoop",
    "JaxCollector",
    "JaxLoop",
    "Loop",
    "SeedAxis",
    "SeedPlacement",
    "TrainCarry",
    "TrainConfig",
    "TrainLoop",
    "checked_call",
    "gather_seeds",
    "initialize_distributed",
    "make_collector",
    "make_env",
    "make_train",
    "make_train_loop",
    "over_seeds",
    "resolve_seed_axis",
    "seed_mesh",
    "train_sharded",
    "train_until",
]
