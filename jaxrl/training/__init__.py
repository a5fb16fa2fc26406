"""Training drivers: whole runs as compiled programs on JAX environments."""

from jaxrl.training.jax_driver import TrainConfig, evaluate, make_env, make_train

__all__ = ["TrainConfig", "evaluate", "make_env", "make_train"]
