#!/bin/bash
# models outside the public benchmark, as a new user brings them: import on the machine (random
# init), build for the stock h200 in float16, bench against PyTorch. STEPS=build,bench
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD:$PWD/bench/results/h100/outside_zoo_more PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
start=$(date +%s)
CNN=${CNN:-"mobilenet_v2 squeezenet1_1 googlenet regnet_y_400mf mobilenet_v3_small convnext_tiny resnet18"}
TXT=${TXT:-"distilbert gpt2_small albert_base llama_small"}
mkdir -p build/probe
if [[ ${STEPS:-build,bench} == *build* ]]; then
  for m in $CNN; do
    [ -f build/probe/$m.yaml ] || python3 -m ait_build import torch torchvision.models:$m --input x:batch,3,224,224 --dim batch=1:128:8 -o build/probe/$m.yaml > $OUT/import_$m.log 2>&1 &
  done
  for m in $TXT; do
    [ -f build/probe/$m.yaml ] || python3 -m ait_build import torch outside_models:$m --input input_ids:batch,seq:int64 --dim batch=1:32:8 --dim seq=1:512:128 -o build/probe/$m.yaml > $OUT/import_$m.log 2>&1 &
  done
  wait; echo "imports at $(( $(date +%s) - start ))s"
  for m in $CNN $TXT; do [ -f build/probe/$m.yaml ] || { echo "import $m failed:"; tail -4 $OUT/import_$m.log; }; done
  SPECS=$(python3 -c "
import os
from ait_build.bench.run import dtype_variant
print(','.join(dtype_variant('build/probe/%s.yaml' % m, 'float16', '.') for m in '$CNN $TXT'.split() if os.path.exists('build/probe/%s.yaml' % m)))")
  [ -z "$SPECS" ] && { echo no specs; exit 1; }
  timeout ${BUILD_S:-400} python3 -m SCons -Q -k -j16 target=h200 spec=$SPECS cache=build/cache > $OUT/build.log 2>&1
  echo "build rc=$? at $(( $(date +%s) - start ))s"; grep -i -E "error|warning" $OUT/build.log | head -5; tail -2 $OUT/build.log
fi
if [[ ${STEPS:-build,bench} == *bench* ]]; then
  for m in $CNN $TXT; do
    [ -f $OUT/bench_$m.json ] && continue
    left=$(( ${BUDGET:-560} - ($(date +%s) - start) )); [ $left -lt 30 ] && { echo "no time for $m"; continue; }
    case $m in
      swin_t) args="--batch 1,64";;
      distilbert|gpt2_small|albert_base|llama_small) args="--batch 1,32 --dim seq=128";;
      *) args="--batch 1,128";;
    esac
    timeout $left python3 -m ait_build bench build/probe/$m.yaml --dtype float16 --target h200 $args --vs torch --prebuilt --json $OUT/bench_$m.json > $OUT/bench_$m.log 2>&1
    echo "$m rc=$?"; grep -E "^\| *(batch|dims)" $OUT/bench_$m.log | head -4
  done
fi
echo "done in $(( $(date +%s) - start ))s"
cd $OUT && tar czf all.tgz *.log *.json 2>/dev/null && rm -f *.log *.json
