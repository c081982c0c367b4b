#!/bin/bash
# every candidate's time on the GEMMs of four unprofiled mobile CNNs and a small-K probe (the estimate's data)
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
start=$(date +%s); nvidia-smi --query-gpu=name --format=csv,noheader
el() { echo "$1 at $(( $(date +%s) - start ))s"; }
left() { echo $(( $1 - ($(date +%s) - start) )); }
pack() { cp build/h200/profile/journal.jsonl $OUT/ 2>/dev/null; cd $OUT && tar czf all.tgz *.log *.json *.jsonl *.yaml 2>/dev/null && rm -f *.log *.json *.yaml *.jsonl; }
trap pack EXIT
mkdir -p build/probe
for m in efficientnet_b0 mobilenet_v2 mnasnet1_0 regnet_y_400mf; do
  python3 -m ait_build import torch torchvision.models:$m --input x:batch,3,224,224 --dim batch=1:128:8 -o build/probe/$m.yaml > $OUT/import_$m.log 2>&1 &
done; wait; el imports
SPECS=$(python3 -c "
from ait_build.bench.run import dtype_variant
print(' '.join(dtype_variant(f'build/probe/{m}.yaml', 'float16', '.') for m in 'efficientnet_b0 mobilenet_v2 mnasnet1_0 regnet_y_400mf'.split()))")
cp bench/results/h100/estimate_small_k/probe_smallk.yaml build/probe/
# the probe built with the estimate's choices, and its steps at 1605632 and 401408 rows
timeout 200 python3 -m SCons -Q -k -j16 target=h200 spec=build/probe/probe_smallk.yaml cache=build/cache > $OUT/build_probe.log 2>&1; el "probe build rc=$?"
timeout 40 python3 -m ait_build bench build/probe/probe_smallk.yaml --target h200 --dim rows=1605632 --steps --prebuilt --runs 20 --json $OUT/steps_probe_1605632.json > $OUT/steps_probe.log 2>&1
timeout 40 python3 -m ait_build bench build/probe/probe_smallk.yaml --target h200 --dim rows=401408 --steps --prebuilt --runs 20 --json $OUT/steps_probe_401408.json >> $OUT/steps_probe.log 2>&1; el "probe steps rc=$?"
grep -E "^[a-z_0-9]+ +[0-9]+ " $OUT/steps_probe.log
cp profiles/h200.yaml $OUT/h200_probe.yaml
timeout $(left 470) python3 -m ait_build profile $SPECS --target h200 --batch 1,128 --kernels gemm -j 16 -o $OUT/h200_probe.yaml > $OUT/profile.log 2>&1; el "profile rc=$?"
timeout $(left 570) python3 -m ait_build profile build/probe/probe_smallk.yaml --target h200 --dim rows=12544,401408,1605632 -j 16 -o $OUT/h200_probe.yaml >> $OUT/profile.log 2>&1; el "profile probe rc=$?"
grep -E "^profiled|^heuristic|rows=|n=96 k=16|n=144 k=24" $OUT/profile.log | tail -12
