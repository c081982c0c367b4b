#!/bin/bash
# the zoo against PyTorch on the H200, twice: EfficientNetV2-S and MobileNetV3-Large (libraries of callSE3, still there)
set -o pipefail
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
for r in 1 2; do
  t "zoo run $r"
  timeout $(( 575 - ($(date +%s) - T0) )) python3 -m ait_build.bench.zoo --steps weights,bench --prebuilt --target h200 \
    --models mobilenet_v3_large,efficientnet_v2_s --budget $(( 560 - ($(date +%s) - T0) )) --out /tmp/res/zoo_r$r > /tmp/res/zoo_r$r.log 2>&1
  cat /tmp/res/zoo_r$r/zoo.md 2>/dev/null | grep "^|"
done
cp -r /tmp/res $OUT/ 2>/dev/null; (cd $OUT && tar czf res.tgz res && rm -rf res)
t done
