#!/bin/bash
# Device checks on one H100: the TRPO update and its parts over 4,096 seeds on the
# GPU (roofline --seeds 4096: apportions the 4,096-seed run's time), then the test suite.
set -o pipefail
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
T0=$SECONDS
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi -L; nproc; lscpu | grep "Model name"; uptime
python3 -c "import jax, flax, jaxrl; print('jax', jax.__version__, 'flax', flax.__version__, jax.devices())" 2>&1 | tail -2 || exit 4
echo "== roofline, 4096 seeds $((SECONDS-T0)) s"
(cd benchmarks && timeout 230 python3 roofline.py --seeds 4096 --programs 'trpo-*-pendulum' --repetitions 5 --seconds 0.5 --no-tianshou --out $OUT/roofline4096 2>&1 | grep -v Warning | tee $OUT/roofline4096.log)
echo "roofline rc $? at $((SECONDS-T0)) s"
LEFT=$((${BUDGET:-560} - (SECONDS-T0)))
echo "== pytest with $LEFT s left"
timeout $LEFT python3 -m pytest -n 14 -v -p no:cacheprovider --durations=15 --maxfail=30 > $OUT/pytest.log 2>&1
echo "pytest rc $? at $((SECONDS-T0)) s"
grep -E "FAILED|ERROR|passed|failed" $OUT/pytest.log | tail -40
grep -c PASSED $OUT/pytest.log
gzip -k $OUT/pytest.log
