#!/bin/bash
# the per-image GEMM entries (h200) against the profile before them (h200b): EfficientNetV2-S, MobileNetV3-Large
set -o pipefail
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
cp build/devcall/h200b_profile.yaml profiles/h200b.yaml
sed -e 's/^name: h200$/name: h200b/' -e 's#profiles/h200.yaml#profiles/h200b.yaml#' targets/h200.yaml > targets/h200b.yaml
Z=build/zoo/efficientnet_v2_s.yaml,build/zoo/mobilenet_v3_large.yaml
t build
timeout 330 python3 -m SCons -Q -k -j 16 target=h200,h200b spec=$Z > $OUT/build.log 2>&1; echo "rc $?"
for tg in h200 h200b; do python3 -m ait_build.bench.zoo --steps weights --target $tg --models efficientnet_v2_s,mobilenet_v3_large > /dev/null 2>&1; done
b() { timeout 60 python3 -m ait_build bench build/zoo/$1.yaml --target $3 --batch $2 --prebuilt --runs $4 --json $OUT/${1:0:4}_b$2_$3_r$k.json 2>&1 | grep -E "^\| batch" | sed "s/^/$3 $1: /"; }
for k in 1 2 3; do
  [ $((k % 2)) = 0 ] && order="h200 h200b" || order="h200b h200"
  for tg in $order; do b efficientnet_v2_s 128 $tg 30; b efficientnet_v2_s 1 $tg 300; b mobilenet_v3_large 128 $tg 100; b mobilenet_v3_large 1 $tg 300; done
  t "round $k"; [ $(( $(date +%s) - T0 )) -gt 520 ] && break
done
t done
