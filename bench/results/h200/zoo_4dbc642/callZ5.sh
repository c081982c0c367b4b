#!/bin/bash
# zoo against PyTorch on the H200: ShuffleNetV2, RegNetX-3.2GF, DenseNet-121 built here, then runs as the budget allows
set -o pipefail
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
M=densenet121,shufflenet_v2_x1_0,regnet_x_3_2gf
mkdir -p /tmp/res5
t build
timeout 260 python3 -m ait_build.bench.zoo --steps build --target h200 -j 16 --models $M --out /tmp/res5/build > /tmp/res5/build.log 2>&1; echo "rc $?"
for r in 1 2; do
  left=$(( 560 - ($(date +%s) - T0) )); [ $left -lt 60 ] && break
  t "zoo run $r"
  timeout $((left + 15)) python3 -m ait_build.bench.zoo --steps weights,bench --prebuilt --target h200 \
    --models $M --budget $left --out /tmp/res5/zoo_r$r > /tmp/res5/zoo_r$r.log 2>&1
  grep "^| [a-z]" /tmp/res5/zoo_r$r/zoo.md 2>/dev/null
done
(cd /tmp && tar czf $OUT/res5.tgz res5)
t done
