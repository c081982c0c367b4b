#!/bin/bash
# device call: 64-row Hopper conv tiles at batch 1 (profile, ResNet-50 batch 1 before/after)
set -o pipefail
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi -L; nproc
# the stock profile before this call's measurements, as a target of its own (h200b)
cp profiles/h200.yaml profiles/h200b.yaml
sed -e 's/^name: h200$/name: h200b/' -e 's#profiles/h200.yaml#profiles/h200b.yaml#' targets/h200.yaml > targets/h200b.yaml
grep -n "^name\|profile_cache" targets/h200b.yaml
t "profile (measure only)"
timeout 200 python3 -m ait_build profile resnet50 build/zoo/densenet121.yaml --target h200 --batch 1 --kernels "conv2d float16" --measure-only > $OUT/profile.log 2>&1; echo "rc $?"
tail -5 $OUT/profile.log
cp profiles/h200.yaml $OUT/profile_h200_after.yaml; cp build/h200/profile/journal.jsonl $OUT/journal.jsonl 2>/dev/null
diff profiles/h200b.yaml profiles/h200.yaml > $OUT/profile.diff; grep -c "^>" $OUT/profile.diff
t "build resnet50 for h200 (after) and h200b (before)"
timeout 300 python3 -m SCons -Q -k -j 16 target=h200,h200b spec=specs/resnet50.yaml,build/zoo/densenet121.yaml > $OUT/build.log 2>&1; echo "rc $?"
tail -3 $OUT/build.log
for r in 1 2; do
  for tg in h200b h200; do
    t "bench $tg round $r"
    timeout 60 python3 -m ait_build bench resnet50 --target $tg --batch 1 --prebuilt --runs 300 --json $OUT/r50_b1_${tg}_r$r.json 2>&1 | tail -4
    timeout 60 python3 -m ait_build bench build/zoo/densenet121.yaml --target $tg --batch 1 --prebuilt --runs 300 --json $OUT/dn121_b1_${tg}_r$r.json 2>&1 | tail -4
  done
done
t "steps (after)"
timeout 60 python3 -m ait_build bench resnet50 --target h200 --batch 1 --prebuilt --steps --runs 50 --json $OUT/steps_r50_b1_after.json 2>&1 | tail -3
timeout 60 python3 -m ait_build bench build/zoo/densenet121.yaml --target h200 --batch 1 --prebuilt --steps --runs 50 --json $OUT/steps_dn121_b1_after.json 2>&1 | tail -3
t done
t "after and before against PyTorch (eager: relative errors)"
for tg in h200 h200b; do
  timeout 120 python3 -m ait_build bench resnet50 --target $tg --batch 1 --prebuilt --vs torch --compile-mode none --runs 100 --json $OUT/r50_b1_${tg}_vs_torch.json 2>&1 | tail -4
  timeout 120 python3 -m ait_build bench build/zoo/densenet121.yaml --target $tg --batch 1 --prebuilt --vs torch --compile-mode none --runs 100 --json $OUT/dn121_b1_${tg}_vs_torch.json 2>&1 | tail -4
done
t done2
