#!/bin/bash
# device call M: A/B of the libraries before (old profile, old borrowing) and after this session's
# profile, in one process each, alternating: ResNet-50 b1, ResNeXt-101 b1, RoBERTa b32 seq 128
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
mkdir -p build/h200 && cp -r build/carry_ab/new/* build/h200/ && el copied
python3 -m ait_build.bench.zoo --steps weights --models resnext101_32x8d,roberta_base --out /tmp/zw 2>&1 | grep "weights "
python3 scratch/r50_weights.py
for m in resnet50 resnext101_32x8d roberta_base; do
  mkdir -p /tmp/ab/new/$m /tmp/ab/old/$m
  cp -r build/h200/$m/. /tmp/ab/new/$m/
  cp -r build/carry_ab/old/$m/. /tmp/ab/old/$m/ && cp build/h200/$m/weights.safetensors /tmp/ab/old/$m/
done
el prepared
bench() {  # side model spec args...
  side=$1; m=$2; shift 2
  rm -rf build/h200/$m && cp -r /tmp/ab/$side/$m build/h200/$m
  python3 -m ait_build bench "$@" --target h200 --prebuilt --runs 300 --json $OUT/ab_${m}_${side}_$k.json 2>&1 | grep -E "^\| (batch|dims)" | tail -n 1 | sed "s/^/$side $m: /"
}
for k in 1 2 3; do
  bench old resnet50 resnet50 --batch 1; bench new resnet50 resnet50 --batch 1
  bench old resnext101_32x8d build/zoo/resnext101_32x8d.yaml --batch 1; bench new resnext101_32x8d build/zoo/resnext101_32x8d.yaml --batch 1
  bench old roberta_base build/zoo/roberta_base.yaml --batch 32 --dim seq=128; bench new roberta_base build/zoo/roberta_base.yaml --batch 32 --dim seq=128
  el "round $k"
  [ $(( $(date +%s) - T0 )) -gt 200 ] && break
done
for side in old new; do
  [ $(( $(date +%s) - T0 )) -gt 260 ] && break
  k=steps; bench $side resnext101_32x8d build/zoo/resnext101_32x8d.yaml --batch 1 --steps > /dev/null
  el "steps $side"
done
