#!/usr/bin/env bash
# Check one mutant against chosen tests, without a full mutmut run (TESTING.md):
#
#   bash tools/mutation_check.sh jaxrl.core.polyak.x_soft_update__mutmut_9 tests/core/test_polyak.py
#
# Writes the mutant into jaxrl/ (`mutmut apply`, after a run of tools/mutation.sh made
# mutants/), runs the tests with pytest -x, restores jaxrl/ from git and prints KILLED or
# SURVIVED. Refuses to start when jaxrl/ has uncommitted changes (they would be lost).
set -u
cd "$(dirname "$0")/.."
mutant=$1
shift
unset PYTHONPATH
git diff --quiet -- jaxrl || { echo "jaxrl/ has uncommitted changes: commit or stash them"; exit 2; }
mutmut apply "$mutant" >/dev/null || { git checkout -- jaxrl; echo "mutmut apply failed"; exit 2; }
python -m pytest -x -q -p no:cacheprovider -W ignore "$@" | tail -1
status=${PIPESTATUS[0]}
git checkout -- jaxrl
if [ "$status" = 0 ]; then echo "SURVIVED $mutant"; else echo "KILLED $mutant"; fi
