#!/bin/bash
# unaligned output channels padded + sliced (passes/pad_out_channels.py) vs the plain kernels:
# GPT-2 with its LM head (50257 logits), LR-ASPP and FCN-ResNet50 (21 classes)
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
start=$(date +%s); nvidia-smi --query-gpu=name --format=csv,noheader
el() { echo "$1 at $(( $(date +%s) - start ))s"; }
# the baseline: the pass list before this pass (git show 56c8f0e:ait_build/passes/__init__.py)
BASE_PASSES=${BASE_PASSES:-scratch/passes_init_before.py}
mkdir -p build/probe
python3 -m ait_build import torch bench.results.h200.pad_out_channels.outside_models:gpt2_lm --input input_ids:batch,seq:int64 --dim batch=1:32:8 --dim seq=1:512:128 -o build/probe/gpt2_lm.yaml > $OUT/import_gpt2_lm.log 2>&1 &
python3 -m ait_build import torch bench.results.h200.pad_out_channels.outside_models:lraspp --input x:batch,3,224,224 --dim batch=1:128:8 -o build/probe/lraspp.yaml > $OUT/import_lraspp.log 2>&1 &
python3 -m ait_build import torch bench.results.h200.pad_out_channels.outside_models:fcn_resnet50 --input x:batch,3,224,224 --dim batch=1:64:8 -o build/probe/fcn.yaml > $OUT/import_fcn.log 2>&1 &
wait; el imports; ls build/probe
MODELS=${MODELS:-"gpt2_lm lraspp fcn"}
SPECS=$(python3 -c "
import os
from ait_build.bench.run import dtype_variant
print(','.join(dtype_variant('build/probe/%s.yaml' % m, 'float16', '.') for m in '$MODELS'.split() if os.path.exists('build/probe/%s.yaml' % m)))")
rm -rf /tmp/base && mkdir /tmp/base && cp -r ait_build templates targets specs profiles scratch SConstruct pyproject.toml /tmp/base/
cp "$BASE_PASSES" /tmp/base/ait_build/passes/__init__.py
mkdir -p /tmp/base/build && cp -r build/probe build/specs /tmp/base/build/
timeout 300 python3 -m SCons -Q -k -j16 target=h200 spec=$SPECS cache=build/cache > $OUT/build.log 2>&1; el "build rc=$?"; tail -2 $OUT/build.log
(cd /tmp/base && PYTHONPATH=/tmp/site:/tmp/base timeout 150 python3 -m SCons -Q -k -j16 target=h200 spec=$SPECS cache=$OLDPWD/build/cache > $OUT/build_base.log 2>&1; echo "base build rc=$?") &
timeout 90 python3 -m pytest -q -m gpu tests/backends/cuda/test_gpu_numerics.py -n 0 -k "test_op_matches_reference and (conv-h200 or gemm-h200 or h200-conv or h200-gemm) and not grouped and not large" > $OUT/pytest_numerics.log 2>&1; el "pytest rc=$?"; tail -2 $OUT/pytest_numerics.log
wait; el "base built"
for m in $MODELS; do
  case $m in gpt2_lm) args="--batch 16 --dim seq=128";; fcn) args="--batch 32";; *) args="--batch 128";; esac
  timeout 60 python3 -m ait_build bench build/probe/$m.yaml --dtype float16 --target h200 $args --steps --prebuilt --runs 20 --json $OUT/steps_$m.json > $OUT/steps_$m.log 2>&1; el "$m steps rc=$?"
  (cd /tmp/base && PYTHONPATH=/tmp/site:/tmp/base timeout 60 python3 -m ait_build bench build/probe/$m.yaml --dtype float16 --target h200 $args --steps --prebuilt --runs 20 --json $OUT/steps_base_$m.json > $OUT/steps_base_$m.log 2>&1); el "$m base steps rc=$?"
  grep -E "^total" $OUT/steps_$m.log $OUT/steps_base_$m.log
done
for m in $MODELS; do
  left=$(( ${BUDGET:-540} - ($(date +%s) - start) )); [ $left -lt 60 ] && { echo "no time for $m vs torch"; continue; }
  case $m in gpt2_lm) args="--batch 1,16 --dim seq=128";; fcn) args="--batch 1,32";; *) args="--batch 1,128";; esac
  timeout $left python3 -m ait_build bench build/probe/$m.yaml --dtype float16 --target h200 $args --vs torch --prebuilt --json $OUT/vs_torch_$m.json > $OUT/vs_torch_$m.log 2>&1
  el "$m vs torch rc=$?"; grep -E "^\| *(batch|dims)" $OUT/vs_torch_$m.log | head -4
done
cd $OUT && tar czf all.tgz *.log *.json 2>/dev/null && rm -f *.log *.json
