#!/usr/bin/env bash
# Mutation testing of the drivers' observation normalization (TESTING.md): both drivers
# normalize through jaxrl.training.env_step's `observe` (every env step) and, on the jitted
# driver, `reset_jax_envs` (the first observations). Their mutants run against
# tests/training/test_obs_normalization.py (both drivers against a NumPy recomputation).
#
#   pip install -e ".[test,mutation]"
#   bash tools/mutation_drivers.sh      # about 5 minutes on 2 cores
#
# mutmut reads its scope from pyproject.toml, whose [tool.mutmut] table is jaxrl/core's, so
# this runs on a scratch copy of the committed tree (git archive HEAD) with that table
# pointed at the drivers' module and test.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
git archive HEAD | tar -x -C "$work"
cd "$work"
python - <<'PY'
from pathlib import Path

p = Path("pyproject.toml")
s = p.read_text()
s = s.replace('only_mutate = ["jaxrl/core/*"]', 'only_mutate = ["jaxrl/training/env_step.py"]')
s = s.replace(
    'pytest_add_cli_args_test_selection = ["tests/core/"]',
    'pytest_add_cli_args_test_selection = ["tests/training/test_obs_normalization.py"]',
)
p.write_text(s)
PY
export XLA_FLAGS="${XLA_FLAGS:-} --xla_llvm_disable_expensive_passes=true"
export JAX_DISABLE_MOST_OPTIMIZATIONS=1
export JAX_DEFAULT_MATMUL_PRECISION=float32
export JAXRL_TESTS_EMITTERS=default  # XLA's own CPU emitters: no flag check per mutant
unset PYTHONPATH
nice -n "${NICE:-10}" mutmut run --max-children "${JOBS:-2}" \
  'jaxrl.training.env_step.x_observe__*' 'jaxrl.training.env_step.x_reset_jax_envs__*' || true
echo "survivors of observe and reset_jax_envs (every other mutant of theirs was killed):"
mutmut results | grep -E "x_(observe|reset_jax_envs)__" | grep -v "not checked" || true
echo "scratch copy (mutmut show NAME there): $work"
