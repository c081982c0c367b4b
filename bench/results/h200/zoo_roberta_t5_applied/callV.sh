#!/bin/bash
# device call: RoBERTa-base and T5-base encoder with the applied entries against PyTorch (zoo bench), two rounds
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
mkdir -p build/h200
for m in roberta_base t5_base_encoder; do rm -rf build/h200/$m; cp -r build/carry_rt/new/$m build/h200/$m; done
for r in 1 2; do
  python3 -m ait_build.bench.zoo --steps weights,bench --prebuilt --target h200 --models roberta_base,t5_base_encoder --batch 1,32 --seq 128 --budget 240 --out $OUT/zoo_r$r 2>&1 | tail -4
done
cd $OUT && tar czf zoo.tgz zoo_r1 zoo_r2 && rm -rf zoo_r1 zoo_r2
