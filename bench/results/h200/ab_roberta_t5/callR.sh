#!/bin/bash
# device call: A/B of RoBERTa-base and T5-base encoder built with profiles/h200.yaml before (old:
# 531 entries, the 4096-row GEMMs borrow ConvNeXt's 6272-row choices) and after the 6 entries
# measured at their own extents (new: 537 entries), at batch 1 and 32 (seq 128), one process per
# line, 3 rounds, the side that goes first swapped each round; 2 more rounds of batch 32 if time is left.
# Libraries built on the dev machine (build/carry_rt/{old,new}/MODEL), weights made here.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
mkdir -p build/h200 $OUT/ab
for m in roberta_base t5_base_encoder; do rm -rf build/h200/$m; cp -r build/carry_rt/new/$m build/h200/$m; done
python3 -m ait_build.bench.zoo --steps weights --target h200 --models roberta_base,t5_base_encoder --out /tmp/zw 2>&1 | grep "weights "
for m in roberta_base t5_base_encoder; do
  mkdir -p /tmp/ab/new/$m /tmp/ab/old/$m
  cp -r build/h200/$m/. /tmp/ab/new/$m/
  cp -r build/carry_rt/old/$m/. /tmp/ab/old/$m/ && cp build/h200/$m/weights.safetensors /tmp/ab/old/$m/
done
el prepared
bench() {  # side model batch
  side=$1; m=$2; b=$3; dims=""; [ $m = roberta_base ] && dims="--dim seq=128"
  rm -rf build/h200/$m && cp -r /tmp/ab/$side/$m build/h200/$m
  python3 -m ait_build bench build/zoo/$m.yaml --target h200 --prebuilt --batch $b $dims --runs 300 \
    --json $OUT/ab/ab_${m}_b${b}_${side}_$k.json > $OUT/ab/out_${m}_b${b}_${side}_$k.txt 2>&1
  grep -E "^\| (batch|dims)" $OUT/ab/out_${m}_b${b}_${side}_$k.txt | tail -n 1 | sed "s/^/$side $m: /"
}
pair() { if [ $((k % 2)) = 1 ]; then bench old "$@"; bench new "$@"; else bench new "$@"; bench old "$@"; fi; }
for k in 1 2 3 4 5; do
  if [ $k -le 3 ]; then pair roberta_base 1; pair t5_base_encoder 1; fi
  pair roberta_base 32; pair t5_base_encoder 32
  el "round $k"
  [ $(( $(date +%s) - T0 )) -gt 300 ] && break
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
cd $OUT && tar czf ab.tgz ab && rm -rf ab
