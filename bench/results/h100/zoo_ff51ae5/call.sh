#!/bin/bash
# zoo against PyTorch on the H200: ShuffleNetV2, RegNetX-3.2GF, DenseNet-121 built here, then runs as the budget allows
set -o pipefail
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site --upgrade .whl/*.whl || exit 1
nvidia-smi --query-gpu=name --format=csv,noheader
M=${M:-convnext_small,resnext101_32x8d}
mkdir -p /tmp/resZ7
t build
timeout 240 python3 -m ait_build.bench.zoo --steps build --target h200 -j 16 --models $M --out /tmp/resZ7/build > /tmp/resZ7/build.log 2>&1; echo "rc $?"
for r in 1 2; do
  left=$(( ${BUD:-540} - ($(date +%s) - T0) )); [ $left -lt 60 ] && break
  t "zoo run $r"
  timeout $((left + 15)) python3 -m ait_build.bench.zoo --steps weights,bench --prebuilt --target h200 \
    --models $M --budget $left --out /tmp/resZ7/zoo_r$r > /tmp/resZ7/zoo_r$r.log 2>&1
  grep "^| [a-z]" /tmp/resZ7/zoo_r$r/zoo.md 2>/dev/null
done
(cd /tmp && tar czf $OUT/resZ7.tgz resZ7)
t done
