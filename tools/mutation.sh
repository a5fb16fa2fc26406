#!/usr/bin/env bash
# Mutation testing of jaxrl/core with mutmut (TESTING.md has the scope and the last score).
#
#   pip install -e ".[test,mutation]"
#   bash tools/mutation.sh              # every mutant of jaxrl/core (2 hours or more on 2 cores)
#   bash tools/mutation.sh 'jaxrl.core.polyak*'   # only the mutants whose names match
#
# The [tool.mutmut] table of pyproject.toml says what is mutated and which tests run. mutmut
# copies the tree to mutants/, runs the selected tests once to learn which tests call each
# function, then for each mutant runs only those tests (stopping at the first failure) in a
# fresh process. Results persist in mutants/: a rerun checks only mutants not yet checked or
# whose function changed; `rm -rf mutants` starts over. JOBS sets the processes run at once.
set -euo pipefail
cd "$(dirname "$0")/.."

# What tests/conftest.py sets, set before mutmut's fork server imports JAX (JAX reads these
# at import): XLA's cheap compile mode and float32 matmuls.
export XLA_FLAGS="${XLA_FLAGS:-} --xla_llvm_disable_expensive_passes=true"
export JAX_DISABLE_MOST_OPTIMIZATIONS=1
export JAX_DEFAULT_MATMUL_PRECISION=float32
export JAXRL_TESTS_EMITTERS=default  # XLA's own CPU emitters: no flag check per mutant
unset PYTHONPATH  # the mutated copy under mutants/ must be the jaxrl that tests import

start=$(date +%s)
nice -n "${NICE:-10}" mutmut run --max-children "${JOBS:-2}" "$@" || true
echo "wall time: $(( $(date +%s) - start )) s"
python tools/mutation_score.py
