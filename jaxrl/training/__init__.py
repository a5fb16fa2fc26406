"""Training drivers: whole runs as compiled programs on JAX environments."""

from jaxrl.training.jax_driver import TrainConfig, evaluate, make_env, make_train
from jaxrl.training.sharding import initialize_distributed, seed_mesh, train_sharded

__all__ = [
    "TrainConfig",
    "evaluate",
    "initialize_distributed",
    "make_env",
    "make_train",
    "seed_mesh",
    "train_sharded",
]
