#!/bin/bash
# ResNeXt-50 32x4d (4 channels per group in layer1) on the GPU: merged groups vs the direct kernel
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
start=$(date +%s); nvidia-smi --query-gpu=name --format=csv,noheader
el() { echo "$1 at $(( $(date +%s) - start ))s"; }
# the baseline: grouped.py before the merge (git show 18476f8:ait_build/backends/cuda/grouped.py)
BASE_GROUPED=${BASE_GROUPED:-scratch/grouped_before.py}
MODELS=${MODELS:-"resnext50_32x4d"}
mkdir -p build/probe
for m in $MODELS; do
  python3 -m ait_build import torch torchvision.models:$m --input x:batch,3,224,224 --dim batch=1:128:8 -o build/probe/$m.yaml > $OUT/import_$m.log 2>&1 &
done; wait; el imports
SPECS=$(python3 -c "
from ait_build.bench.run import dtype_variant
print(','.join(dtype_variant('build/probe/%s.yaml' % m, 'float16', '.') for m in '$MODELS'.split()))")
# the baseline tree: the same checkout with grouped.py as before the merge
rm -rf /tmp/base && mkdir /tmp/base && cp -r ait_build templates targets specs profiles SConstruct pyproject.toml /tmp/base/ 2>/dev/null
cp "$BASE_GROUPED" /tmp/base/ait_build/backends/cuda/grouped.py
mkdir -p /tmp/base/build && cp -r build/probe build/specs /tmp/base/build/
timeout 330 python3 -m SCons -Q -k -j16 target=h200 spec=$SPECS cache=build/cache > $OUT/build.log 2>&1; el "build rc=$?"
tail -2 $OUT/build.log
(cd /tmp/base && PYTHONPATH=/tmp/site:/tmp/base timeout 200 python3 -m SCons -Q -k -j16 target=h200 spec=$SPECS cache=$OLDPWD/build/cache > $OUT/build_base.log 2>&1; echo "base build rc=$?") &
for m in $MODELS; do
  timeout 200 python3 -m ait_build bench build/probe/$m.yaml --dtype float16 --target h200 --batch 1,128 --vs torch --prebuilt --json $OUT/vs_torch_$m.json > $OUT/vs_torch_$m.log 2>&1
  el "$m vs torch rc=$?"; grep -E "^\| *(batch|dims|model)" $OUT/vs_torch_$m.log | head -4
done
wait; el "base built"
for m in $MODELS; do
  timeout 60 python3 -m ait_build bench build/probe/$m.yaml --dtype float16 --target h200 --batch 128 --steps --prebuilt --runs 20 --json $OUT/steps_$m.json > $OUT/steps_$m.log 2>&1; el "steps rc=$?"
  (cd /tmp/base && PYTHONPATH=/tmp/site:/tmp/base timeout 60 python3 -m ait_build bench build/probe/$m.yaml --dtype float16 --target h200 --batch 128 --steps --prebuilt --runs 20 --json $OUT/steps_base_$m.json > $OUT/steps_base_$m.log 2>&1); el "base steps rc=$?"
done
left=$(( 540 - ($(date +%s) - start) ))
[ $left -gt 60 ] && timeout $left python3 -m pytest -q -m gpu tests/backends/cuda/test_gpu_numerics.py -k "grouped_conv" -n 0 > $OUT/pytest_grouped.log 2>&1; el "pytest rc=$?"; tail -3 $OUT/pytest_grouped.log
cd $OUT && tar czf all.tgz *.log *.json 2>/dev/null && rm -f *.log *.json
