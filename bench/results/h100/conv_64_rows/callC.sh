#!/bin/bash
# device call: ResNet-50 at batch 1 with the profile's 64-row conv entries
# (h200) against the stock profile (h200b), alternating rounds
set -o pipefail
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi -L; nproc
cp build/devcall/h200b_profile.yaml profiles/h200b.yaml
sed -e 's/^name: h200$/name: h200b/' -e 's#profiles/h200.yaml#profiles/h200b.yaml#' targets/h200.yaml > targets/h200b.yaml
t "build"
timeout 300 python3 -m SCons -Q -k -j 16 target=h200,h200b model=resnet50 > $OUT/build.log 2>&1; echo "rc $?"
tail -2 $OUT/build.log
for r in 1 2 3 4 5 6; do
  [ $((r % 2)) = 0 ] && order="h200 h200b" || order="h200b h200"
  for tg in $order; do
    t "round $r $tg"
    timeout 60 python3 -m ait_build bench resnet50 --target $tg --batch 1 --prebuilt --runs 1000 --json $OUT/r50_b1_${tg}_r$r.json 2>&1 | grep "batch=1"
  done
done
t done
