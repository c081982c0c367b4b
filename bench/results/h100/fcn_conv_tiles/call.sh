#!/bin/bash
# FCN-ResNet50 rebuilt with the sm90 128x256 conv tile gone and the vectorized resize, timed
# at batch 32 (steps) and against PyTorch; the GPU numerics of the conv, gemm, resizes groups
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
start=$(date +%s); nvidia-smi --query-gpu=name --format=csv,noheader
el() { echo "$1 at $(( $(date +%s) - start ))s"; }
mkdir -p build/probe
python3 -m ait_build import torch bench.results.h200.pad_out_channels.outside_models:fcn_resnet50 --input x:batch,3,224,224 --dim batch=1:64:8 -o build/probe/fcn.yaml > $OUT/import_fcn.log 2>&1; el import
SPEC=$(python3 -c "
from ait_build.bench.run import dtype_variant
print(dtype_variant('build/probe/fcn.yaml', 'float16', '.'))")
(timeout 280 python3 -m pytest -q -v -m gpu tests/backends/cuda/test_gpu_numerics.py -n 0 -k "test_op_matches_reference and (conv-h200 or gemm-h200 or resizes-h200 or resizes-a100) and not grouped and not large and not stem" > $OUT/pytest_numerics.log 2>&1; echo "pytest rc=$?") &
timeout 300 python3 -m SCons -Q -k -j12 target=h200 spec=$SPEC cache=build/cache > $OUT/build.log 2>&1; el "build rc=$?"; tail -1 $OUT/build.log
timeout 60 python3 -m ait_build bench build/probe/fcn.yaml --dtype float16 --target h200 --batch 32 --steps --prebuilt --runs 20 --json $OUT/steps_fcn.json > $OUT/steps_fcn.log 2>&1; el "steps rc=$?"; grep -E "^total|^conv2d|^resize" $OUT/steps_fcn.log
wait; el "pytest done"; grep -E "PASS|FAIL|passed|failed" $OUT/pytest_numerics.log | tail -6
left=$(( 540 - ($(date +%s) - start) ))
[ $left -gt 60 ] && timeout $left python3 -m ait_build bench build/probe/fcn.yaml --dtype float16 --target h200 --batch 1,32 --vs torch --prebuilt --json $OUT/vs_torch_fcn.json > $OUT/vs_torch_fcn.log 2>&1; el "vs torch rc=$?"; grep -E "^\| *(batch|dims)" $OUT/vs_torch_fcn.log
cd $OUT && tar czf all.tgz *.log *.json 2>/dev/null && rm -f *.log *.json
