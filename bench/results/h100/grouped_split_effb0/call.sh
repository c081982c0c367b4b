#!/bin/bash
# RegNetX-8GF split grouped kernel vs the build before it; EfficientNet-B0 vs torch; grouped_conv GPU numerics
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
start=$(date +%s); nvidia-smi --query-gpu=name --format=csv,noheader
el() { echo "$1 at $(( $(date +%s) - start ))s"; }
pack() { cd $OUT && tar czf all.tgz *.log *.json 2>/dev/null && rm -f *.log *.json; }
trap pack EXIT
mkdir -p build/probe
python3 -m ait_build import torch torchvision.models:regnet_x_8gf --input x:batch,3,224,224 --dim batch=1:64:8 -o build/probe/regnet_x_8gf.yaml > $OUT/import.log 2>&1 &
python3 -m ait_build import torch torchvision.models:efficientnet_b0 --input x:batch,3,224,224 --dim batch=1:128:8 -o build/probe/efficientnet_b0.yaml > $OUT/import_e.log 2>&1 &
wait; el imports
SPEC=$(python3 -c "
from ait_build.bench.run import dtype_variant
print(dtype_variant('build/probe/regnet_x_8gf.yaml', 'float16', '.'))")
SPECE=$(python3 -c "
from ait_build.bench.run import dtype_variant
print(dtype_variant('build/probe/efficientnet_b0.yaml', 'float16', '.'))")
rm -rf /tmp/base && mkdir /tmp/base && cp -r ait_build templates targets specs profiles SConstruct pyproject.toml /tmp/base/
cp scratch/grouped_split_before.py /tmp/base/ait_build/backends/cuda/grouped.py
mkdir -p /tmp/base/build && cp -r build/probe build/specs /tmp/base/build/
timeout 240 python3 -m SCons -Q -k -j16 target=h200 spec=$SPEC cache=build/cache > $OUT/build.log 2>&1; el "build rc=$?"; tail -2 $OUT/build.log
(timeout 200 python3 -m pytest -q -m gpu tests/backends/cuda/test_gpu_numerics.py -n 0 -k "test_op_matches_reference and grouped_conv" -rA > $OUT/pytest_grouped.log 2>&1; echo "pytest rc=$?") &
(cd /tmp/base && PYTHONPATH=/tmp/site:/tmp/base timeout 100 python3 -m SCons -Q -k -j8 target=h200 spec=$SPEC cache=$OLDPWD/build/cache > $OUT/build_base.log 2>&1); el "base build rc=$?"
timeout 30 python3 -m ait_build bench build/probe/regnet_x_8gf.yaml --dtype float16 --target h200 --batch 32 --steps --prebuilt --runs 10 --json $OUT/steps_regnet_x_8gf.json > $OUT/steps.log 2>&1; el "steps rc=$?"
(cd /tmp/base && PYTHONPATH=/tmp/site:/tmp/base timeout 30 python3 -m ait_build bench build/probe/regnet_x_8gf.yaml --dtype float16 --target h200 --batch 32 --steps --prebuilt --runs 10 --json $OUT/steps_base_regnet_x_8gf.json > $OUT/steps_base.log 2>&1); el "base steps rc=$?"
grep -E "^total|^conv2d_grouped|^conv2d_direct" $OUT/steps.log $OUT/steps_base.log | head -20
timeout 90 python3 -m ait_build bench build/probe/regnet_x_8gf.yaml --dtype float16 --target h200 --batch 1,32 --vs torch --prebuilt --json $OUT/vs_torch_regnet_x_8gf.json > $OUT/vs_torch_regnet_x_8gf.log 2>&1; el "vs torch rc=$?"; grep -E "^\| *(batch|dims)|^\| *[0-9]" $OUT/vs_torch_regnet_x_8gf.log | head
wait
left=$(( 560 - ($(date +%s) - start) ))
timeout $(( left > 250 ? 250 : left )) python3 -m SCons -Q -k -j16 target=h200 spec=$SPECE cache=build/cache > $OUT/build_e.log 2>&1; el "build e rc=$?"; tail -1 $OUT/build_e.log
left=$(( 580 - ($(date +%s) - start) ))
[ $left -gt 30 ] && timeout $left python3 -m ait_build bench build/probe/efficientnet_b0.yaml --dtype float16 --target h200 --batch 1,128 --vs torch --prebuilt --json $OUT/vs_torch_efficientnet_b0.json > $OUT/vs_torch_efficientnet_b0.log 2>&1; el "vs torch e rc=$?"; grep -E "^\| *(batch|dims)|^\| *[0-9]" $OUT/vs_torch_efficientnet_b0.log | head
grep -E "PASSED|FAILED|passed|failed" $OUT/pytest_grouped.log | tail -6
