#!/usr/bin/env bash
# One worker of a MuJoCo tuning study (TRPO, or NPG with ALGO=npg), niced, on one CPU:
#   PYTHON=/path/to/venv/bin/python [ALGO=npg] bash benchmarks/tuning/study.sh TASK CPU [STUDIES_DIR]
# e.g. `bash benchmarks/tuning/study.sh Hopper-v5 0`; the space is ALGO_mujoco.search here.
# Run it from a git worktree fixed at one commit (the studies' numbers must not change under
# them): the worker runs that checkout's jaxrl (PYTHONPATH), whatever jaxrl the environment
# has installed. The same command resumes the study (a dead worker's trial is asked again);
# more workers may join it on other CPUs.
# 3 search seeds (1000-1002), 1M env steps per trial, the median pruner; TRIALS trials (24 by
# default: on two CPU cores a 1M-step trial takes about 45 minutes, and Hopper's and Swimmer's
# studies reached rl-zoo's published level within 12).
set -euo pipefail
algo=${ALGO:-trpo}
task=$1
cpu=$2
studies=${3:-/work/studies}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$studies"
export PYTHONPATH="$here/../.."
# nice alone does not yield to other sessions where the kernel groups processes by session
# (autogroup): a worker started with setsid leads a group of its own, which competes as one
# nice-0 process. Such a worker lowers its group's priority too (a worker in a shell's
# session leaves that session's as it is).
if [ "$(ps -o sid= -p $$ | tr -d ' ')" = "$$" ] && [ -w /proc/self/autogroup ]; then
  echo 19 > /proc/self/autogroup 2>/dev/null || true
fi
exec taskset -c "$cpu" nice -n 19 "${PYTHON:-python}" -m jaxrl tune "$algo" --env "$task" --preset rl-zoo \
  --num-seeds 3 --trials "${TRIALS:-24}" --batch 1 --search-file "$here/${algo}_mujoco.search" \
  --tune-dir "$studies/$algo-$task" --study-name "$algo-$task" \
  >> "$studies/$algo-$task.log" 2>&1
