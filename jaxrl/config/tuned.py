"""The values ``jaxrl tune`` found per MuJoCo task, over rl-zoo's settings: what the
``mujoco-tuned`` preset (:mod:`jaxrl.config.presets`) sets on each task. Each is the best
trial of a study on search seeds, kept only where it beat the preset it started from on 10
held-out seeds (``docs/benchmarks/tuning.md``)."""

from __future__ import annotations

# The best trial of each task's study (benchmarks/tuning/, docs/benchmarks/tuning.md: 3 search
# seeds at 1M env steps, the search space in trpo_mujoco.search), over rl-zoo's settings; each
# retrained on 10 held-out seeds (benchmarks/results/tuned_heldout_trpo_TASK.json).
TUNED_TRPO = {
    "Ant": {  # study trpo-Ant-v5, trial 11
        "max_kl": 0.008556859838486242,
        "gae_lambda": 0.9401355613066866,
        "gamma": 0.98,
        "lr": 0.0003024178290266885,
        "optim_critic_iters": 30,
        "critic_batch_size": 256,
        "log_std_init": -0.7692790298706962,
        "num_steps": 512,
    },
    "HalfCheetah": {  # study trpo-HalfCheetah-v5, trial 13
        "max_kl": 0.007644753580315356,
        "gae_lambda": 0.9513605374694833,
        "gamma": 0.99,
        "lr": 0.0001314220531997731,
        "optim_critic_iters": 30,
        "critic_batch_size": 64,
        "log_std_init": -0.9429810108877161,
        "num_steps": 1024,
    },
    "Hopper": {  # study trpo-Hopper-v5, trial 7
        "max_kl": 0.005960439631423121,
        "gae_lambda": 0.9701926913016103,
        "gamma": 0.995,
        "lr": 0.00012776981339382372,
        "optim_critic_iters": 30,
        "critic_batch_size": 64,
        "log_std_init": -0.06879398031097828,
        "num_steps": 512,
    },
    "Swimmer": {  # study trpo-Swimmer-v5, trial 11
        "max_kl": 0.01645589083949001,
        "gae_lambda": 0.976514442392818,
        "gamma": 0.999,
        "lr": 0.0025381927205140225,
        "optim_critic_iters": 5,
        "critic_batch_size": 64,
        "log_std_init": -0.29617020094680047,
        "num_steps": 2048,
    },
    "Walker2d": {  # study trpo-Walker2d-v5, trial 13
        "max_kl": 0.041078494289031896,
        "gae_lambda": 0.9788546576403608,
        "gamma": 0.995,
        "lr": 0.0001412944787040992,
        "optim_critic_iters": 30,
        "critic_batch_size": 256,
        "log_std_init": -0.3614564440914571,
        "num_steps": 2048,
    },
}
# NPG's study (npg_mujoco.search, the same protocol) over rl-zoo's settings with NPG's step
# size 0.1; retrained on 10 held-out seeds (benchmarks/results/tuned_heldout_npg_TASK.json).
TUNED_NPG = {
    "HalfCheetah": {  # study npg-HalfCheetah-v5, trial 4
        "trust_region_size": 0.04519771306320705,
        "gae_lambda": 0.9419679695570675,
        "gamma": 0.999,
        "lr": 0.00019515333830126354,
        "optim_critic_iters": 30,
        "critic_batch_size": 128,
        "log_std_init": -0.9608122077456793,
        "num_steps": 512,
    },
    "Hopper": {},  # study npg-Hopper-v5, trial 0: rl-zoo's values, no trial beat them
    "Swimmer": {  # study npg-Swimmer-v5, trial 1
        "trust_region_size": 0.11701414134690252,
        "gae_lambda": 0.9643670429735177,
        "gamma": 0.999,
        "lr": 0.00207614104200153,
        "optim_critic_iters": 5,
        "critic_batch_size": 128,
        "log_std_init": -0.22184324905014952,
        "num_steps": 2048,
    },
}
