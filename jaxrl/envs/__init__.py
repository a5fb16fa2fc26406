"""Environment adapters.

- JAX-native environments for the jitted driver, all with gymnax's interface: gymnax ids and
  Brax ids (``"brax:hopper"``) resolved by :func:`make_env`.
- Host environments for the host driver (gymnasium, EnvPool) behind one interface.
"""

from jaxrl.envs.brax_env import (
    ACCELERATOR_SOLVER,
    BRAX_BACKENDS,
    BraxEnv,
    Solver,
    brax_available,
    is_brax_id,
    make_brax_env,
)
from jaxrl.envs.host import (
    ENV_BACKENDS,
    EnvironmentError_,
    EnvPoolVectorEnv,
    GymnasiumVectorEnv,
    HostStep,
    HostVectorEnv,
    checked_step,
    envpool_available,
    host_vector_env,
    is_envpool,
    make_host_env,
    resolve_env_backend,
)
from jaxrl.envs.jax_envs import make_env, resolve_backend

__all__ = [
    "ACCELERATOR_SOLVER",
    "BRAX_BACKENDS",
    "BraxEnv",
    "Solver",
    "brax_available",
    "is_brax_id",
    "make_brax_env",
    "make_env",
    "resolve_backend",
    "ENV_BACKENDS",
    "EnvPoolVectorEnv",
    "EnvironmentError_",
    "GymnasiumVectorEnv",
    "HostStep",
    "HostVectorEnv",
    "checked_step",
    "envpool_available",
    "host_vector_env",
    "is_envpool",
    "make_host_env",
    "resolve_env_backend",
]
