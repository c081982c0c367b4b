#!/bin/bash
# device call: profile the squeeze-excitation fold's per-image GEMMs (and the other
# float16 col-B GEMMs without activation) of EfficientNetV2-S and MobileNetV3-Large
set -o pipefail
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader; nproc
cp profiles/h200.yaml $OUT/h200_before.yaml
t "profile"
timeout 500 python3 -m ait_build profile build/zoo/efficientnet_v2_s.yaml build/zoo/mobilenet_v3_large.yaml \
  --target h200 --batch 1,128 --kernels "gemm float16 b=col act=none" -j 16 2>&1 | tee $OUT/profile.log | grep -v "^  " | tail -40
echo "rc $?"
cp profiles/h200.yaml $OUT/h200_after.yaml
cp build/h200/profile/journal.jsonl $OUT/journal.jsonl 2>/dev/null
diff $OUT/h200_before.yaml $OUT/h200_after.yaml > $OUT/profile.diff; wc -l $OUT/profile.diff
t done
