#!/bin/bash
# device call: the importers' compositions on a GPU again, with sizes only the run knows
set -o pipefail
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name --format=csv,noheader
R=/tmp/resG3; mkdir -p $R
t "GPU import forms"
AIT_BUILD_CACHE=/tmp/scache AIT_GPU_REPORT=$R/errors_forms.jsonl timeout 400 python3 -m pytest -m gpu -p no:cacheprovider -q -n 0 tests/backends/cuda/test_gpu_import_forms.py > $R/pytest_forms.log 2>&1; echo "rc $?"
tail -4 $R/pytest_forms.log
(cd /tmp && tar czf $OUT/resG3.tgz resG3)
t done
