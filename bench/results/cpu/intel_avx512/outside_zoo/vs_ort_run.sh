#!/bin/bash
cd /tmp/probe
M="mnasnet1_0 efficientnet_b0 regnet_y_400mf googlenet mobilenet_v2 squeezenet1_1 resnet18"
for m in $M; do timeout 900 python3 -m ait_build build specs/$m.yaml --target cpu -j 2 2>&1 | tail -1; done
python3 /work/main/bench/cpu_vs_ort.py $(for m in $M; do printf "specs/$m.yaml "; done) --threads 2 --rounds 3 --runs 20
