#!/bin/bash
# ResNet-50 (seed) on the stock h200: built on the machine, then against PyTorch's best mode
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
start=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
timeout 200 python3 -m SCons -Q -j16 target=h200 model=resnet50 cache=build/cache > $OUT/build.log 2>&1
echo "build rc=$? in $(( $(date +%s) - start ))s"
timeout 230 python3 -m ait_build bench resnet50 --target h200 --batch 1,256 --vs torch --prebuilt --json $OUT/resnet50_vs_torch.json 2>&1 | tail -8
echo "done in $(( $(date +%s) - start ))s"
