#!/bin/bash
cd "$(git rev-parse --show-toplevel)"  # the float32 specs: `ait-build bench build/zoo/NAME.yaml --dtype float32` once
M="regnet_x_3_2gf resnext101_32x8d mobilenet_v3_large shufflenet_v2_x1_0 efficientnet_v2_s convnext_small densenet121"
for m in $M; do timeout 900 python3 -m ait_build build build/specs/${m}_float32.yaml --target cpu -j 2 2>&1 | tail -1; done
python3 bench/cpu_vs_ort.py $(for m in $M; do printf "build/specs/${m}_float32.yaml "; done) --threads 2 --rounds 3 --runs 20
