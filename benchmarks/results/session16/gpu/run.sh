#!/bin/bash
# Device checks for session 16: 4,096 TRPO seeds x 245,760 steps (issue 30), then the test suite.
set -o pipefail
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
T0=$SECONDS
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi -L; nproc; lscpu | grep "Model name"
python3 -c "import jax, flax, jaxrl; print('jax', jax.__version__, 'flax', flax.__version__, jax.devices())" 2>&1 | tail -2 || exit 4
cd benchmarks
echo "== 4096 seeds, default (float32 trust region) $((SECONDS-T0)) s"
timeout 220 python3 seed_scaling.py --algos trpo --seeds 4096 --no-tianshou --out $OUT/s4096 2>&1 | tee $OUT/s4096.log | grep -v Warning
echo "== 4096 seeds, TF32 trust region (experiment) $((SECONDS-T0)) s"
timeout 160 python3 -c "
import runpy, sys
import jaxrl.algorithms.natural_gradient as ng
ng.TRUST_REGION_PRECISION = 'tensorfloat32'
sys.argv = ['seed_scaling.py', '--algos', 'trpo', '--seeds', '4096', '--no-tianshou', '--out', '$OUT/s4096tf32']
runpy.run_path('seed_scaling.py', run_name='__main__')
" 2>&1 | tee $OUT/s4096tf32.log | grep -v Warning
cd ..
LEFT=$((555 - (SECONDS-T0)))
echo "== pytest with $LEFT s left"
timeout $LEFT python3 -m pytest -n 12 -v -p no:cacheprovider --durations=15 --maxfail=30 2>&1 > $OUT/pytest.log
echo "pytest rc $?"
grep -E "FAILED|ERROR|passed|failed" $OUT/pytest.log | tail -40
rm -f $OUT/*/*.png $OUT/*/*.partial.json
grep -c PASSED $OUT/pytest.log
