"""Environment adapters: host environments (gymnasium, EnvPool) behind one interface."""

from jaxrl.envs.host import (
    ENV_BACKENDS,
    EnvironmentError_,
    EnvPoolVectorEnv,
    GymnasiumVectorEnv,
    HostStep,
    HostVectorEnv,
    checked_step,
    envpool_available,
    make_host_env,
    resolve_env_backend,
)

__all__ = [
    "ENV_BACKENDS",
    "EnvPoolVectorEnv",
    "EnvironmentError_",
    "GymnasiumVectorEnv",
    "HostStep",
    "HostVectorEnv",
    "checked_step",
    "envpool_available",
    "make_host_env",
    "resolve_env_backend",
]
