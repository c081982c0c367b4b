#!/bin/bash
# the a100 half of the GPU suite: every non-seed spec built for a100 here, then its tests
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
start=$(date +%s)
nvidia-smi --query-gpu=name,memory.total --format=csv > $OUT/gpu.txt; cat $OUT/gpu.txt
git rev-parse HEAD > $OUT/commit.txt 2>/dev/null
SPECS=$(cd tests/backends/cuda && python3 cuda_op_groups.py | tr ',' '\n' | grep -v "specs/\(bert_base\|resnet50\|vit_b16\)\.yaml\|vit_b16_bfloat16" | paste -sd,)
timeout 360 python3 -m SCons -Q -k -j16 target=a100 spec=$SPECS cache=build/cache > $OUT/build_a100.log 2>&1
echo "build rc=$? at $(( $(date +%s) - start ))s"; grep -c linking $OUT/build_a100.log
left=$(( 585 - ($(date +%s) - start) ))
AIT_PREBUILT=1 AIT_GPU_REPORT=$OUT/errors_a100.jsonl timeout $left python3 -m pytest -q -m gpu -p no:cacheprovider tests/backends/cuda -k "a100 and not (resnet50 or bert_base or vit_b16 or seed) and not import_families" --deselect tests/backends/cuda/test_gpu_fp16acc.py 2>&1 | grep -v "^  warn" | tail -40 > $OUT/pytest_a100.log
tail -15 $OUT/pytest_a100.log
echo "done in $(( $(date +%s) - start ))s"
