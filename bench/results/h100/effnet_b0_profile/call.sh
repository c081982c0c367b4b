#!/bin/bash
# EfficientNet-B0 at batch 128 (1.26x torch.compile on an H100): steps, its GEMM families profiled, again vs torch
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
start=$(date +%s); nvidia-smi --query-gpu=name --format=csv,noheader
el() { echo "$1 at $(( $(date +%s) - start ))s"; }
left() { echo $(( $1 - ($(date +%s) - start) )); }
pack() { cd $OUT && tar czf all.tgz *.log *.json *.yaml 2>/dev/null && rm -f *.log *.json *.yaml; }
trap pack EXIT
mkdir -p build/probe
python3 -m ait_build import torch torchvision.models:efficientnet_b0 --input x:batch,3,224,224 --dim batch=1:128:8 -o build/probe/efficientnet_b0.yaml > $OUT/import.log 2>&1; el import
SPEC=$(python3 -c "
from ait_build.bench.run import dtype_variant
print(dtype_variant('build/probe/efficientnet_b0.yaml', 'float16', '.'))")
timeout 200 python3 -m SCons -Q -k -j16 target=h200 spec=$SPEC cache=build/cache > $OUT/build.log 2>&1; el "build rc=$?"
timeout 40 python3 -m ait_build bench build/probe/efficientnet_b0.yaml --dtype float16 --target h200 --batch 128 --steps --prebuilt --runs 20 --json $OUT/steps_b0_b128.json > $OUT/steps_b0_b128.log 2>&1; el "steps rc=$?"
grep -E "^[a-z_0-9]+ +[0-9]+ " $OUT/steps_b0_b128.log | head -20
cp profiles/h200.yaml $OUT/h200_b0.yaml
timeout $(left 430) python3 -m ait_build profile $SPEC --target h200 --batch 1,128 -j 16 -o $OUT/h200_b0.yaml > $OUT/profile_b0.log 2>&1; el "profile rc=$?"
tail -5 $OUT/profile_b0.log
cp $OUT/h200_b0.yaml profiles/h200.yaml
timeout $(left 500) python3 -m SCons -Q -k -j16 target=h200 spec=$SPEC cache=build/cache > $OUT/build2.log 2>&1; el "build2 rc=$?"
timeout $(left 520) python3 -m ait_build bench build/probe/efficientnet_b0.yaml --dtype float16 --target h200 --batch 128 --steps --prebuilt --runs 20 --json $OUT/steps_b0_b128_profiled.json > $OUT/steps_b0_b128_profiled.log 2>&1; el "steps2 rc=$?"
grep -E "^[a-z_0-9]+ +[0-9]+ " $OUT/steps_b0_b128_profiled.log | head -20
L=$(left 585); [ $L -gt 20 ] && timeout $L python3 -m ait_build bench build/probe/efficientnet_b0.yaml --dtype float16 --target h200 --batch 1,128 --vs torch --prebuilt --json $OUT/vs_torch_b0_profiled.json > $OUT/vs_torch_b0_profiled.log 2>&1; el "vs torch rc=$?"
grep -E "^\| *batch" $OUT/vs_torch_b0_profiled.log
