#!/bin/bash
# run 2 (warm machine: the build of run 1 kept) and the step reports at the large batch
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
ls build/h200 2>/dev/null
python3 -m ait_build.bench.zoo --out $OUT/r2 --steps build,bench -j 16 --models efficientnet_v2_s,mobilenet_v3_large --budget 420 2>&1 | tail -30
for m in efficientnet_v2_s mobilenet_v3_large; do
  timeout 50 python3 -m ait_build bench build/zoo/$m.yaml --target h200 --batch 128 --steps --prebuilt --runs 20 --json $OUT/r2/steps_${m}_b128.json > $OUT/r2/steps_${m}_b128.log 2>&1
  grep -E "^[a-z_0-9]+ +[0-9]+ " $OUT/r2/steps_${m}_b128.log | head -30
done
cd $OUT && tar czf all.tgz r2 && rm -rf r2
