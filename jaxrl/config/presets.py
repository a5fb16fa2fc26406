"""Named settings of NPG, TRPO and DDPG runs: hyperparameters and run shape together.

A preset is what a user who does not know Tianshou's tuned settings should get for an
environment. :func:`preset_for_env` picks one from the environment id (the command line does
this unless ``--preset`` names one); every value can still be overridden.

- ``mujoco``: Tianshou's MuJoCo example settings (``examples/mujoco/mujoco_{trpo,npg,ddpg}.py``
  of Tianshou 2.0.1; see ``shared/reference/tianshou.md``): NPG/TRPO with [64, 64] tanh
  networks, orthogonal init gain sqrt(2), last actor layer x0.01, log-std init -0.5, gamma
  0.99, lambda 0.95, 16 envs x 64 steps, 20 critic iterations, critic lr 1e-3 with linear
  decay, return scaling and observation normalization; TRPO max_kl 0.01, NPG step size 0.1.
  DDPG: [256, 256] relu, actor and critic lr 1e-3, 25k random start steps, Gaussian noise 0.1,
  batch 256, 1 env, 1 update per env step, a 1M-transition buffer. Budget: 1M env steps.
  Brax's versions of these tasks (``brax:hopper``, ...) get the same settings: Brax models
  them after gymnasium's MuJoCo tasks (rewards, termination, actions in [-1, 1]; a
  1000-step time limit here), though its physics differ in detail.
- ``pendulum``: settings that *end* with a solved Pendulum-v1 (the command's main job), found
  by a search over seeds the tests and the reported figures do not use
  (``benchmarks/pendulum_search.py``, checked by ``benchmarks/pendulum_final_return.py``;
  ``docs/benchmarks/learning.md``, "How the preset was chosen"): TRPO as in Tianshou's
  MuJoCo examples (orthogonal init gain sqrt(2), last actor layer x0.01, log-std init -0.5,
  20 critic iterations, observation normalization) with Tianshou's test values of gamma
  (0.95), lambda and lr, max_kl 0.01, larger collections (16 envs x 512 steps: 8,192 env
  steps per update) and a deterministic evaluation; 327,680 env steps. NPG and DDPG keep
  Tianshou's test settings (NPG's unnormalized steps did not learn with these 40 large
  updates).
- ``tianshou-pendulum``: Tianshou's tuned Pendulum-v1 test settings
  (``test/continuous/test_*.py``), tuned to pass a best-return bar with early stopping.
- ``accelerator``: ``mujoco``'s NPG and TRPO for a GPU or TPU, where sequential steps set the
  pace: 64 envs x 16 steps per seed (the same 1,024 env steps per update, a quarter of the
  sequential steps) and periods of 122 collections (1,952 vector steps, more than a 1,000-step
  episode) evaluated alongside training (``eval_alongside``), so that only the final policy's
  evaluation takes steps of its own: 6% of a 1M-step run's (``jaxrl train --plan``).
- ``rl-zoo``: rl-baselines3-zoo's TRPO settings for MuJoCo (``hyperparams/trpo.yml``), where
  the tuning studies start.
- ``mujoco-tuned``: TRPO and NPG tuned per task by ``jaxrl tune`` from ``rl-zoo`` (TRPO: Ant,
  HalfCheetah, Hopper, Swimmer, Walker2d; NPG: HalfCheetah, Hopper, Swimmer; other tasks are
  refused), each task's values retrained on 10 held-out seeds
  (``docs/benchmarks/tuning.md``).
- ``default``: the algorithm's own defaults (Tianshou's library defaults) with the run shape
  of Tianshou's Pendulum tests; for every other environment.
"""

from __future__ import annotations

import dataclasses
import difflib
from types import MappingProxyType
from typing import Any

from jaxrl.config.tuned import TUNED_NPG as _TUNED_NPG
from jaxrl.config.tuned import TUNED_TRPO as _TUNED_TRPO
from jaxrl.tasks import BRAX_MUJOCO_TASKS, is_mujoco_id


@dataclasses.dataclass(frozen=True)
class Preset:
    """One named setting.

    Attributes:
      name: the name ``--preset`` takes.
      description: where the values come from (one line).
      hyperparameters: per algorithm name, the fields that differ from the class defaults.
      run: per algorithm name, the run shape (``num_envs``, ``num_steps``, ``total_steps``,
        ``eval_every``, ``eval_episodes``, ``normalize_obs``).
      tasks: per task (an environment id's name before its version: ``"Swimmer"``), per
        algorithm name, the hyperparameters and run settings that differ on that task.
      tasks_only: the preset is for its listed tasks alone (values tuned per task): another
        environment is refused rather than given values tuned for none.
    """

    name: str
    description: str
    hyperparameters: MappingProxyType
    run: MappingProxyType
    tasks: MappingProxyType = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    tasks_only: bool = False

    def for_algo(
        self,
        algo: str,
        like: str = "trpo",
        hyperparameters_like: str | None = None,
        env: str | None = None,
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """``(hyperparameters, run)`` of ``algo`` in this preset (fresh dicts), on ``env``
        where the preset has values for its task. An algorithm the preset does not list gets
        the run shape of the listed algorithm it is ``like`` (the registry's
        ``run_shape_like``: TRPO's for on-policy algorithms, DDPG's for off-policy ones) and
        the hyperparameters of ``hyperparameters_like`` (the registry's ``presets_like``: TD3
        takes DDPG's), or none (its class defaults).

        Raises:
          ValueError: the preset has no run shape for ``algo`` nor for ``like``, or is
            ``tasks_only`` and has no values for ``env``'s task.
        """
        if not self.covers(algo, like):
            raise ValueError(
                f"preset {self.name} has no settings for {algo}: it is for "
                f"{', '.join(self.run)}; choose another --preset"
            )
        hyperparameters = dict(
            self.hyperparameters.get(algo, self.hyperparameters.get(hyperparameters_like or "", {}))
        )
        run = dict(self.run.get(algo, self.run[like]))
        if env is None:
            return hyperparameters, run
        self.check_task(env, algo)
        task = self.tasks.get(task_name(env), {})
        values = task.get(algo, task.get(hyperparameters_like or "", {}))
        hyperparameters.update({k: v for k, v in values.items() if k not in run})
        run.update({k: v for k, v in values.items() if k in run})
        return hyperparameters, run

    def check_task(self, env: str, algo: str | None = None) -> None:
        """Raises ``ValueError`` when the preset is ``tasks_only`` and has no values for
        ``env``'s task (for ``algo``, when one is given)."""
        if not self.tasks_only:
            return
        tasks = [task for task, values in self.tasks.items() if algo is None or algo in values]
        if task_name(env) not in tasks:
            which = "" if algo is None else f"{algo} on "
            raise ValueError(
                f"preset {self.name} has values for {which}{', '.join(tasks)} only, not {env}; "
                "choose another --preset"
            )

    def covers(self, algo: str, like: str = "trpo") -> bool:
        """Whether the preset has settings for ``algo`` (its own, or those it is ``like``; a
        ``tasks_only`` preset its own alone)."""
        if self.tasks_only:
            return algo in self.run
        return algo in self.run or like in self.run


def task_name(env_id: str) -> str:
    """An environment id's task: its name before the version (``"Swimmer-v5"`` ->
    ``"Swimmer"``)."""
    return env_id.rsplit("-v", 1)[0]


def _frozen(table: dict[str, dict[str, Any]]) -> MappingProxyType:
    return MappingProxyType({algo: MappingProxyType(values) for algo, values in table.items()})


# Tianshou's Pendulum test run shape: 16 envs x 128 steps per collection.
_TIANSHOU_ON_POLICY_RUN = {
    "num_envs": 16,
    "num_steps": 128,
    "total_steps": 150_000,
    "eval_every": 20_480,
    "eval_episodes": 10,
    "normalize_obs": False,
}
_TIANSHOU_DDPG_RUN = {
    "num_envs": 8,
    "num_steps": 1,
    "total_steps": 50_000,
    "eval_every": 5_000,
    "eval_episodes": 10,
    "normalize_obs": False,
}
_TIANSHOU_PENDULUM_RUN = {
    "npg": _TIANSHOU_ON_POLICY_RUN,
    "trpo": _TIANSHOU_ON_POLICY_RUN,
    "ddpg": _TIANSHOU_DDPG_RUN,
}
_TIANSHOU_PENDULUM = {
    "npg": {
        "gamma": 0.95,
        "lr": 1e-3,
        "return_scaling": True,
        "repeat": 2,
        "trust_region_size": 0.5,
        "deterministic_eval": True,
    },
    "trpo": {
        "gamma": 0.95,
        "lr": 1e-3,
        "return_scaling": True,
        "repeat": 2,
        "max_kl": 0.005,
    },
    "ddpg": {
        "n_step_return_horizon": 3,
        "batch_size": 128,
        "actor_lr": 1e-4,
        "critic_lr": 1e-3,
        "exploration_noise": "gaussian:0.1",
        "hidden_sizes": (128, 128),
    },
}
# 16 envs x 512 steps = 8,192 env steps per update; 10 evaluations of 4 updates each.
_PENDULUM_ON_POLICY_RUN = {
    "num_envs": 16,
    "num_steps": 512,
    "total_steps": 327_680,
    "eval_every": 32_768,
    "eval_episodes": 10,
    "normalize_obs": True,
}
_MUJOCO_ON_POLICY = {
    "gamma": 0.99,
    "gae_lambda": 0.95,
    "lr": 1e-3,
    "lr_schedule": "linear",
    "return_scaling": True,
    "advantage_normalization": True,
    "optim_critic_iters": 20,
    "repeat": 1,
    "batch_size": None,
    "hidden_sizes": (64, 64),
    "activation": "tanh",
    "init_gain": 2.0**0.5,
    "actor_output_scale": 0.01,
    "log_std_init": -0.5,
}
# The main job's settings (see the module docstring and docs/benchmarks/learning.md): Tianshou's
# MuJoCo networks and critic steps with its Pendulum test's gamma and a constant lr.
_PENDULUM_ON_POLICY = {
    **_MUJOCO_ON_POLICY,
    "gamma": 0.95,
    "lr_schedule": "constant",
    "deterministic_eval": True,
}
# 16 envs x 64 steps = 1024 env steps per update; 39 evaluations of 25 updates each
# (998,400 env steps of the 1M budget: runs are whole evaluation periods).
_MUJOCO_ON_POLICY_RUN = {
    "num_envs": 16,
    "num_steps": 64,
    "total_steps": 1_000_000,
    "eval_every": 25_600,
    "eval_episodes": 10,
    "normalize_obs": True,
}

# The mujoco run on an accelerator (module docstring).
_ACCELERATOR_RUN = {
    "num_envs": 64,
    "num_steps": 16,
    "total_steps": 1_000_000,
    "eval_every": 124_928,
    "eval_episodes": 10,
    "normalize_obs": True,
    "eval_alongside": True,
}

# rl-baselines3-zoo's TRPO settings for MuJoCo (hyperparams/trpo.yml; sb3-contrib's TRPO):
# 2 envs x 1,024 steps, the actor's natural-gradient step on the whole batch, then 20 critic
# passes in minibatches of 128 at Adam 1e-3, GAE 0.95, CG 25 steps with damping 0.1, KL 0.01,
# observation normalization; sb3's MlpPolicy networks ([64, 64] tanh, orthogonal init gain
# sqrt(2), policy output x0.01, log-std 0) and deterministic evaluation. sb3's reward
# normalization (rewards divided by a running std of the discounted return) is here
# return_scaling (the critic's targets divided by a running std of the returns): advantages
# are normalized either way.
_RL_ZOO_ON_POLICY = {
    "gamma": 0.99,
    "gae_lambda": 0.95,
    "lr": 1e-3,
    "lr_schedule": "constant",
    "return_scaling": True,
    "advantage_normalization": True,
    "optim_critic_iters": 20,
    "batch_size": None,
    "critic_batch_size": 128,
    "repeat": 1,
    "hidden_sizes": (64, 64),
    "activation": "tanh",
    "init_gain": 2.0**0.5,
    "actor_output_scale": 0.01,
    "log_std_init": 0.0,
    "cg_iters": 25,
    "damping": 0.1,
    "deterministic_eval": True,
}
# 2 envs x 1,024 steps: 488 updates in 1M env steps (999,424), 61 evaluations of 8 updates
# (16,384 env steps; the zoo evaluates every 25,000) of 5 episodes (the zoo's).
_RL_ZOO_RUN = {
    "num_envs": 2,
    "num_steps": 1024,
    "total_steps": 1_000_000,
    "eval_every": 16_384,
    "eval_episodes": 5,
    "normalize_obs": True,
}

# rl-zoo's values for both on-policy algorithms: the rl-zoo preset's, and what
# mujoco-tuned's tasks change.
_RL_ZOO = _frozen(
    {
        "trpo": {**_RL_ZOO_ON_POLICY, "max_kl": 0.01},
        "npg": {**_RL_ZOO_ON_POLICY, "trust_region_size": 0.1},
    }
)
_RL_ZOO_RUNS = _frozen({"trpo": _RL_ZOO_RUN, "npg": _RL_ZOO_RUN})

PRESETS: dict[str, Preset] = {
    "pendulum": Preset(
        "pendulum",
        "settings that end with a solved Pendulum-v1 (TRPO tuned by a seed search, NPG and "
        "DDPG with Tianshou's test settings)",
        _frozen(
            {
                # NPG's unnormalized steps need many updates; with these 40 large ones it
                # does not learn (docs/benchmarks/learning.md), so it keeps Tianshou's.
                "npg": _TIANSHOU_PENDULUM["npg"],
                "trpo": {**_PENDULUM_ON_POLICY, "max_kl": 0.01},
                "ddpg": _TIANSHOU_PENDULUM["ddpg"],
            }
        ),
        _frozen(
            {
                "npg": _TIANSHOU_ON_POLICY_RUN,
                "trpo": _PENDULUM_ON_POLICY_RUN,
                "ddpg": _TIANSHOU_DDPG_RUN,
            }
        ),
    ),
    "tianshou-pendulum": Preset(
        "tianshou-pendulum",
        "Tianshou's tuned Pendulum-v1 test settings (test/continuous/test_{npg,trpo,ddpg}.py)",
        _frozen(_TIANSHOU_PENDULUM),
        _frozen(_TIANSHOU_PENDULUM_RUN),
    ),
    "mujoco": Preset(
        "mujoco",
        "Tianshou's MuJoCo example settings (examples/mujoco/mujoco_{npg,trpo,ddpg}.py)",
        _frozen(
            {
                "npg": {**_MUJOCO_ON_POLICY, "trust_region_size": 0.1},
                "trpo": {**_MUJOCO_ON_POLICY, "max_kl": 0.01},
                "ddpg": {
                    "gamma": 0.99,
                    "tau": 0.005,
                    "actor_lr": 1e-3,
                    "critic_lr": 1e-3,
                    "hidden_sizes": (256, 256),
                    "activation": "relu",
                    "exploration_noise": "gaussian:0.1",
                    "n_step_return_horizon": 1,
                    "batch_size": 256,
                    "buffer_size": 1_000_000,
                    "warmup_steps": 25_000,
                    "update_per_step": 1.0,
                },
            }
        ),
        _frozen(
            {
                "npg": _MUJOCO_ON_POLICY_RUN,
                "trpo": _MUJOCO_ON_POLICY_RUN,
                "ddpg": {
                    "num_envs": 1,
                    "num_steps": 1,
                    "total_steps": 1_000_000,
                    "eval_every": 5_000,
                    "eval_episodes": 10,
                    "normalize_obs": False,
                },
            }
        ),
    ),
    "accelerator": Preset(
        "accelerator",
        "the mujoco preset's NPG and TRPO shaped for a GPU or TPU: 64 envs x 16 steps per seed "
        "(its 1,024 env steps per update), 8 evaluations a run alongside training",
        _frozen(
            {
                "npg": {**_MUJOCO_ON_POLICY, "trust_region_size": 0.1},
                "trpo": {**_MUJOCO_ON_POLICY, "max_kl": 0.01},
            }
        ),
        _frozen({"npg": _ACCELERATOR_RUN, "trpo": _ACCELERATOR_RUN}),
    ),
    "rl-zoo": Preset(
        "rl-zoo",
        "rl-baselines3-zoo's TRPO settings for MuJoCo (hyperparams/trpo.yml, sb3-contrib); NPG "
        "with the same and its step size 0.1",
        _RL_ZOO,
        _RL_ZOO_RUNS,
        _frozen(
            {"HalfCheetah": {"trpo": {"max_kl": 0.04}}, "Swimmer": {"trpo": {"gamma": 0.9999}}}
        ),
    ),
    "mujoco-tuned": Preset(
        "mujoco-tuned",
        "TRPO and NPG tuned per MuJoCo task by jaxrl tune from rl-zoo's settings (TRPO: Ant, "
        "HalfCheetah, Hopper, Swimmer, Walker2d; NPG: HalfCheetah, Hopper, Swimmer)",
        _RL_ZOO,
        _RL_ZOO_RUNS,
        _frozen(
            {
                task: {
                    algo: values[task]
                    for algo, values in (("trpo", _TUNED_TRPO), ("npg", _TUNED_NPG))
                    if task in values
                }
                for task in sorted({*_TUNED_TRPO, *_TUNED_NPG})
            }
        ),
        tasks_only=True,
    ),
    "default": Preset(
        "default",
        "the algorithm's own defaults (Tianshou's library defaults), Tianshou's Pendulum run shape",
        _frozen({"npg": {}, "trpo": {}, "ddpg": {"exploration_noise": "gaussian:0.1"}}),
        _frozen(_TIANSHOU_PENDULUM_RUN),
    ),
}


def preset_for_env(env_id: str) -> str:
    """The preset an environment gets when none is named: ``mujoco`` for MuJoCo ids (and the
    Brax ids of MuJoCo tasks, ``brax:hopper``), ``pendulum`` for ``Pendulum-v1``,
    ``default`` otherwise."""
    brax_task = env_id.startswith("brax:") and env_id[len("brax:") :] in BRAX_MUJOCO_TASKS
    if is_mujoco_id(env_id) or brax_task:
        return "mujoco"
    if env_id.rsplit("-v", 1)[0] == "Pendulum":
        return "pendulum"
    return "default"


def presets_help() -> str:
    """Every registered preset with its description, for the ``--preset`` help:
    ``"pendulum: settings that ...; tianshou-pendulum: ...; ..."`` (registry order)."""
    return "; ".join(f"{preset.name}: {preset.description}" for preset in PRESETS.values())


def get_preset(name: str) -> Preset:
    """The preset called ``name``; ``ValueError`` naming the known ones otherwise."""
    if name not in PRESETS:
        close = difflib.get_close_matches(name, PRESETS, n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        raise ValueError(f"unknown preset {name!r}: choose from {', '.join(sorted(PRESETS))}{hint}")
    return PRESETS[name]
