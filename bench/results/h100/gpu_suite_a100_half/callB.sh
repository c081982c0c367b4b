#!/bin/bash
# the kitchen sink (imports and builds its own spec, h200 and a100) and float16 accumulation
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
start=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader
AIT_PREBUILT=1 AIT_GPU_REPORT=$OUT/errors_b.jsonl timeout 560 python3 -m pytest -q -m gpu -p no:cacheprovider tests/backends/cuda/test_gpu_import_families.py tests/backends/cuda/test_gpu_fp16acc.py 2>&1 | grep -v "^  warn" | tail -40 > $OUT/pytest_b.log
tail -15 $OUT/pytest_b.log
echo "done in $(( $(date +%s) - start ))s"
