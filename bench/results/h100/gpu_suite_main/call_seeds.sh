#!/bin/bash
# the h200 half of the GPU suite on main: the seed models: build every op-group spec, then the tests
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader; start=$(date +%s)
SPECS=$(python3 tests/backends/cuda/cuda_op_groups.py | tr ',' '\n' | grep -E "/specs/(bert_base|resnet50|vit_b16)\.yaml|vit_b16_bfloat16" | paste -sd,)
timeout 330 python3 -m SCons -Q -k -j16 target=h200 spec="$SPECS" cache=build/cache > $OUT/build.log 2>&1
echo "build rc=$? at $(( $(date +%s) - start ))s"; grep -m5 -B2 -A8 "error" $OUT/build.log | head -40
L=$(( 585 - ($(date +%s) - start) ))
AIT_PREBUILT=1 AIT_GPU_REPORT=$OUT/errors.jsonl timeout $L python3 -m pytest -m gpu tests/backends/cuda -q -p no:cacheprovider -rfs -k "not a100 and (resnet50 or bert_base or vit_b16 or seed)" --deselect tests/backends/cuda/test_gpu_fp16acc.py --junitxml=$OUT/pytest.xml > $OUT/pytest.log 2>&1
echo "tests rc=$? at $(( $(date +%s) - start ))s"; tail -15 $OUT/pytest.log
