#!/usr/bin/env bash
# The wheels the GPU machine lacks, into .whl/ (git-ignored; carried to the machine with the
# working tree: `run`'s carry [".whl"], under 64 MiB with the repository).
#
# The machine (the device tool's KINDS.md) has Python 3.12 on x86_64 with JAX (CUDA), flax,
# optax, chex, orbax-checkpoint, numpy, scipy, matplotlib, rich, tensorboard and imageio, and no
# network. It lacks Brax, MuJoCo (and MJX), gymnax, gymnasium, distrax, tyro, optuna and what
# they need. Then, on the machine:
#
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
#   PYTHONPATH=/tmp/site:$PWD python3 benchmarks/gpu_check.py --out $OUT
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .whl && mkdir .whl
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
  --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 \
  --platform manylinux_2_17_x86_64 --platform any -d .whl \
  "brax==0.14.2" "mujoco==4.0.1" "mujoco-core==4.0.1" "mujoco-studio==4.0.1" \
  "mujoco-studio-wasm==4.0.1" "mujoco-mjx==3.17.0" "gymnax>=1.0.1,<1.1" "flask" "flask-cors" \
  "itsdangerous" "blinker" \
  "gymnasium>=1.3.0,<1.4" "distrax>=0.1.9,<0.2" "tensorflow-probability" "tyro>=1.0.17,<1.1" \
  "optuna>=5.0,<6" "tensorboardX>=2.6.5,<3" "lazy_loader>=0.4,<1" "jaxopt" "ml_collections" \
  "dm_env" "trimesh" "glfw" "pyopengl" "farama-notifications" "docstring_parser" \
  "typeguard" "shtab" "alembic" "colorlog" "sqlalchemy" "mako" "gast" "dm-tree" \
  "decorator" "cloudpickle" "typing-inspection"
du -sh .whl
