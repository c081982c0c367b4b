#!/bin/bash
# dependent launches on public models at batch 1: build four small CNNs for the stock h200, A/B forced on/off
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
start=$(date +%s)
M="mobilenet_v3_large efficientnet_v2_s shufflenet_v2_x1_0 regnet_x_3_2gf"
SPECS=$(for m in $M; do printf "build/zoo/$m.yaml,"; done | sed 's/,$//')
timeout 360 python3 -m SCons -Q -k -j16 target=h200 spec=$SPECS cache=build/cache > $OUT/build.log 2>&1
echo "build rc=$? in $(( $(date +%s) - start ))s"; tail -2 $OUT/build.log
for m in $M; do
  timeout 50 python3 bench/dependent_launch_ab.py build/h200/$m --batch 1 --rounds 3 --runs 200 --json $OUT/ab_$m.json 2>&1 | tail -1
done
echo "done in $(( $(date +%s) - start ))s"
