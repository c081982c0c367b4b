#!/bin/bash
# stock h200 with dependent launches chosen by size: build the seeds, A/B forced on/off over batches, step reports
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
start=$(date +%s)
timeout 330 python3 -m SCons -Q -k -j16 target=h200 spec=specs/resnet50.yaml,specs/vit_b16.yaml,specs/bert_base.yaml cache=build/cache > $OUT/build.log 2>&1
echo "build rc=$? in $(( $(date +%s) - start ))s"; tail -3 $OUT/build.log
ls build/h200
D=build/h200
AB="timeout 70 python3 bench/dependent_launch_ab.py"
$AB $D/resnet50 --batch 1,4,16,64 --rounds 3 --runs 100 --json $OUT/ab_r50.json 2>&1 | tail -20
$AB $D/vit_b16 --batch 1,4,16,64 --rounds 3 --runs 100 --json $OUT/ab_vit.json 2>&1 | tail -20
$AB $D/bert_base --batch 1,4,16,64 --dim seq=128 --rounds 3 --runs 100 --json $OUT/ab_bert.json 2>&1 | tail -20
echo "ab done in $(( $(date +%s) - start ))s"
A="timeout 50 python3 -m ait_build bench"
$A specs/bert_base.yaml --target h200 --batch 1,128 --dim seq=128 --steps --prebuilt --runs 20 --json $OUT/steps_bert_s128.json 2>&1 | tail -2
$A specs/vit_b16.yaml --target h200 --batch 1,256 --steps --prebuilt --runs 20 --json $OUT/steps_vit.json 2>&1 | tail -2
$A specs/bert_base.yaml --target h200 --batch 8 --dim seq=4096 --steps --prebuilt --runs 10 --json $OUT/steps_bert_s4096.json 2>&1 | tail -2
$A specs/resnet50.yaml --target h200 --batch 1,256 --steps --prebuilt --runs 20 --json $OUT/steps_resnet50.json 2>&1 | tail -2
echo "done in $(( $(date +%s) - start ))s"
