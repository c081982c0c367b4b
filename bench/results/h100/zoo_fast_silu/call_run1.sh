#!/bin/bash
# run 1: build EfficientNetV2-S and MobileNetV3-Large for h200 (after the fast SiLU/hardswish), zoo bench both
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
python3 -m ait_build.bench.zoo --out $OUT/r1 --steps build,bench -j 16 --models mobilenet_v3_large,efficientnet_v2_s --budget 560 2>&1 | tail -30
cd $OUT && tar czf all.tgz r1 && rm -rf r1
