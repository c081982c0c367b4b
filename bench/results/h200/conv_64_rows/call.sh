#!/bin/bash
set -o pipefail
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
cp profiles/h200.yaml $OUT/h200_before.yaml
t "profile convs b1"
timeout 240 python3 -m ait_build profile resnet50 build/zoo/densenet121.yaml --target h200 --batch 1 --kernels "conv2d float16" -j 16 2>&1 | tee $OUT/profile.log | grep -v "^\[" | tail -8
cp profiles/h200.yaml $OUT/h200_after.yaml; diff $OUT/h200_before.yaml $OUT/h200_after.yaml > $OUT/profile.diff; wc -l $OUT/profile.diff
t "build"
timeout 200 python3 -m SCons -Q -k -j 16 target=h200 model=resnet50 > $OUT/build.log 2>&1; echo "rc $?"
for r in 1 2; do t "r50 b1 run $r"
timeout 90 python3 -m ait_build bench resnet50 --target h200 --batch 1 --prebuilt --vs torch --runs 1000 --json $OUT/r50_b1_vs_torch_r$r.json 2>&1 | grep -E "^\|" ; done
t done
