#!/bin/bash
# models outside the public benchmark, as a new user brings them: import on this machine (float32
# weights of torchvision's init), build for the stock h200 in float16, bench against PyTorch
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
start=$(date +%s)
M=${M:-"googlenet efficientnet_b0 mnasnet1_0 regnet_y_400mf mobilenet_v2"}
mkdir -p build/probe
for m in $M; do
  python3 -m ait_build import torch torchvision.models:$m --input x:batch,3,224,224 -o build/probe/$m.yaml > $OUT/import_$m.log 2>&1 &
done
wait; echo "imports at $(( $(date +%s) - start ))s"; ls build/probe
SPECS=$(python3 -c "
from ait_build.bench.run import dtype_variant
print(','.join(dtype_variant('build/probe/%s.yaml' % m, 'float16', '.') for m in '$M'.split()))")
echo "$SPECS"
timeout 180 python3 -m SCons -Q -k -j16 target=h200 spec=$SPECS cache=build/cache > $OUT/build.log 2>&1
echo "build rc=$? at $(( $(date +%s) - start ))s"; tail -3 $OUT/build.log
for m in $M; do
  left=$(( ${BUDGET:-560} - ($(date +%s) - start) )); [ $left -lt 20 ] && break
  timeout $left python3 -m ait_build bench build/probe/$m.yaml --dtype float16 --target h200 --batch 1,128 --vs torch --prebuilt --json $OUT/bench_$m.json > $OUT/bench_$m.log 2>&1
  grep -E "batch=|rel" $OUT/bench_$m.log | head -6
done
echo "done in $(( $(date +%s) - start ))s"
