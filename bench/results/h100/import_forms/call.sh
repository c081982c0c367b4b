#!/bin/bash
# device call: GPU tests not yet run on a GPU: the importers' compositions (test_gpu_import_forms),
# the op groups with leaky_relu in the epilogues, bicubic resizes and the new unary/integer ops
set -o pipefail
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name --format=csv,noheader; nproc
R=/tmp/resG2; mkdir -p $R
G="epilogue_activations resizes masks_and_clamps"
SPECS=$(cd tests/backends/cuda && python3 -c "
from cuda_op_groups import op_spec
print(','.join(op_spec(g) for g in '$G'.split()))")
t "build groups"
timeout 300 python3 -m SCons -Q -k -j16 target=h200 spec=$SPECS cache=/tmp/scache > $R/build.log 2>&1; echo "rc $?"
tail -2 $R/build.log
t "GPU numerics"
AIT_PREBUILT=1 AIT_GPU_REPORT=$R/errors.jsonl timeout 120 python3 -m pytest -m gpu -p no:cacheprovider -q -n 0 tests/backends/cuda/test_gpu_numerics.py \
  -k "op_matches and h200 and ($(echo $G | sed 's/ / or /g'))" > $R/pytest_numerics.log 2>&1; echo "rc $?"
tail -4 $R/pytest_numerics.log
t "GPU import forms"
AIT_BUILD_CACHE=/tmp/scache AIT_GPU_REPORT=$R/errors_forms.jsonl timeout 240 python3 -m pytest -m gpu -p no:cacheprovider -q -n 0 tests/backends/cuda/test_gpu_import_forms.py > $R/pytest_forms.log 2>&1; echo "rc $?"
tail -15 $R/pytest_forms.log
(cd /tmp && tar czf $OUT/resG2.tgz resG2)
t done
