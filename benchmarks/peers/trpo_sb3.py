"""TRPO with rl-baselines3-zoo's MuJoCo settings: sb3-contrib against ``jaxrl --preset rl-zoo``,
side by side at equal env steps, seed by seed.

sb3-contrib runs in a virtual environment of its own (``--sb3-python``; made here with pip
when missing: torch 2.13.0, sb3-contrib, gymnasium[mujoco]), jaxrl in this one. Both sides
train one seed per process, alternating, and evaluate the final policy deterministically on
10 episodes (sb3: ``VecNormalize`` statistics frozen, rewards unnormalized). Each side's
settings are rl-zoo's ``hyperparams/trpo.yml`` (per task: HalfCheetah KL 0.04, Swimmer gamma
0.9999); where jaxrl's TRPO differs (reward normalization: sb3 scales rewards, jaxrl the
critic's targets), the preset's docstring says so.

    python benchmarks/peers/trpo_sb3.py --env Hopper-v5 --total-steps 98304 --seeds 0 1 2 3 4
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from common import loadavg, machine_info, print_machine, write_json  # noqa: E402

SB3_VENV = HERE / ".venv-sb3"
SB3_PACKAGES = ["torch==2.13.0", "sb3-contrib>=2.7,<3", "gymnasium[mujoco]>=1.3,<1.4"]

# One sb3-contrib seed: rl-zoo's TRPO settings, the final policy's deterministic return.
SB3_RUN = r"""
import json, sys, time
import numpy as np
from sb3_contrib import TRPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.vec_env import VecNormalize

env_id, total, seed, episodes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
task = env_id.rsplit("-v", 1)[0]
gamma = 0.9999 if task == "Swimmer" else 0.99
target_kl = 0.04 if task == "HalfCheetah" else 0.01
start = time.perf_counter()
env = VecNormalize(make_vec_env(env_id, n_envs=2, seed=seed), gamma=gamma)
model = TRPO(
    "MlpPolicy", env, n_steps=1024, batch_size=128, gamma=gamma, gae_lambda=0.95,
    sub_sampling_factor=1, cg_max_steps=25, cg_damping=0.1, n_critic_updates=20,
    learning_rate=1e-3, target_kl=target_kl, seed=seed, device="cpu",
)
model.learn(total)
seconds = time.perf_counter() - start
test = VecNormalize(make_vec_env(env_id, n_envs=1, seed=seed + 10_000), gamma=gamma,
                    training=False, norm_reward=False)
test.obs_rms = env.obs_rms
returns, _ = evaluate_policy(model, test, n_eval_episodes=episodes, deterministic=True,
                             return_episode_rewards=True)
print(json.dumps({"return": float(np.mean(returns)), "seconds": seconds,
                  "env_steps": int(model.num_timesteps)}))
"""


def ensure_sb3(python: Path) -> Path:
    """The peer environment's interpreter, made with pip when missing."""
    if python.exists():
        return python
    venv = python.parent.parent
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", *SB3_PACKAGES], check=True)
    return python


def run_sb3(python: Path, env: str, total: int, seed: int, episodes: int) -> dict:
    done = subprocess.run(
        [str(python), "-c", SB3_RUN, env, str(total), str(seed), str(episodes)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    if done.returncode:
        raise SystemExit(f"sb3-contrib failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_jaxrl(env: str, total: int, seed: int, episodes: int, scratch: Path) -> dict:
    run_dir = scratch / f"jaxrl-{seed}"
    command = [sys.executable, "-m", "jaxrl", "train", "trpo", "--env", env, "--preset", "rl-zoo"]
    command += ["--total-steps", str(total), "--num-seeds", "1", "--seed", str(seed)]
    command += ["--eval-episodes", str(episodes), "--run-dir", str(run_dir)]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"jaxrl failed:\n{done.stderr[-3000:]}")
    final = json.loads((run_dir / "final_eval.json").read_text())
    return {
        "return": float(np.mean(final["deterministic"])),
        "seconds": seconds,
        "env_steps": int(final["env_steps"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="Hopper-v5")
    parser.add_argument("--total-steps", type=int, default=98_304)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--sb3-python", type=Path, default=SB3_VENV / "bin" / "python")
    parser.add_argument("--out", type=Path, default=HERE.parent / "results")
    args = parser.parse_args()
    info = machine_info()
    print_machine(info)
    python = ensure_sb3(args.sb3_python)
    rows = []
    load_before = loadavg()
    with tempfile.TemporaryDirectory() as scratch:
        for index, seed in enumerate(args.seeds):  # alternate which side goes first
            sides = ["sb3", "jaxrl"] if index % 2 == 0 else ["jaxrl", "sb3"]
            for side in sides:
                if side == "sb3":
                    got = run_sb3(python, args.env, args.total_steps, seed, args.episodes)
                else:
                    got = run_jaxrl(args.env, args.total_steps, seed, args.episodes, Path(scratch))
                rows.append({"side": side, "seed": seed, **got})
                line = f"{side:6s} seed {seed}: return {got['return']:8.1f} after "
                print(line + f"{got['env_steps']:,} env steps, {got['seconds']:.0f} s", flush=True)
    summary = {}
    for side in ("sb3", "jaxrl"):
        returns = np.asarray([r["return"] for r in rows if r["side"] == side])
        seconds = np.asarray([r["seconds"] for r in rows if r["side"] == side])
        summary[side] = {
            "mean": float(returns.mean()),
            "std": float(returns.std()),
            "min": float(returns.min()),
            "max": float(returns.max()),
            "seconds_median": float(np.median(seconds)),
        }
        print(
            f"{side:6s}: final deterministic return {returns.mean():.1f} +- {returns.std():.1f} "
            f"(min {returns.min():.1f}, max {returns.max():.1f}) over {len(returns)} seeds; "
            f"median {np.median(seconds):.0f} s per seed"
        )
    result = {
        "env": args.env,
        "total_steps": args.total_steps,
        "seeds": args.seeds,
        "rows": rows,
        "summary": summary,
        "machine": info,
        "loadavg_before": load_before,
        "loadavg_after": loadavg(),
    }
    write_json(args.out / f"trpo_sb3_{args.env}_{args.total_steps}.json", result)


if __name__ == "__main__":
    main()
