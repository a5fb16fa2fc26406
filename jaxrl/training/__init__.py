"""Training drivers (whole runs as compiled programs on JAX environments; the host driver is
:mod:`jaxrl.training.gymnasium_driver`) and the collectors research code builds its own loop
from (:func:`make_collector`, :mod:`jaxrl.training.collect`)."""

from jaxrl.training.collect import (
    CollectorState,
    HostCollector,
    JaxCollector,
    make_collector,
)
from jaxrl.training.evaluation import evaluate
from jaxrl.training.jax_driver import (
    TrainCarry,
    TrainConfig,
    TrainLoop,
    checked_call,
    make_env,
    make_train,
    make_train_loop,
    train_until,
)
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
    "JaxCollector",
    "SeedAxis",
    "SeedPlacement",
    "TrainCarry",
    "TrainConfig",
    "TrainLoop",
    "checked_call",
    "evaluate",
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
