#!/bin/bash
# the fast device SiLU/sigmoid and the estimate's tile cost: GPU numerics of the activation groups,
# the small-K probe and EfficientNet-B0 (stock profile, no entries of its own) against the runs before
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
start=$(date +%s); nvidia-smi --query-gpu=name --format=csv,noheader
el() { echo "$1 at $(( $(date +%s) - start ))s"; }
left() { echo $(( $1 - ($(date +%s) - start) )); }
pack() { cd $OUT && tar czf all.tgz *.log *.json *.jsonl 2>/dev/null && rm -f *.log *.json *.jsonl; }
trap pack EXIT
mkdir -p build/probe && cp bench/results/h100/estimate_small_k/probe_smallk.yaml build/probe/
for m in efficientnet_b0 mobilenet_v2; do
  python3 -m ait_build import torch torchvision.models:$m --input x:batch,3,224,224 --dim batch=1:128:8 -o build/probe/$m.yaml > $OUT/import_$m.log 2>&1 &
done; wait; el imports
SPECS=$(python3 -c "
from ait_build.bench.run import dtype_variant
print(','.join(dtype_variant(f'build/probe/{m}.yaml', 'float16', '.') for m in 'efficientnet_b0 mobilenet_v2'.split()))")
T=tests/backends/cuda/test_gpu_numerics.py::test_op_matches_reference
(AIT_GPU_REPORT=$OUT/errors.jsonl timeout 300 python3 -m pytest -q -m gpu -n 0 -p no:cacheprovider "$T[elementwise-h200]" "$T[epilogue_activations-h200]" "$T[gemm-h200]" "$T[squeeze_excitation-h200]" "$T[direct_stems-h200]" "$T[depthwise-h200]" -rA > $OUT/pytest.log 2>&1; echo "pytest rc=$?") &
timeout 240 python3 -m SCons -Q -k -j12 target=h200 spec=build/probe/probe_smallk.yaml,$SPECS cache=build/cache > $OUT/build.log 2>&1; el "build rc=$?"
timeout 40 python3 -m ait_build bench build/probe/probe_smallk.yaml --target h200 --dim rows=1605632 --steps --prebuilt --runs 20 --json $OUT/steps_probe_1605632.json > $OUT/steps_probe.log 2>&1; el "probe steps rc=$?"
grep -E "^[a-z_0-9]+ +[0-9]+ " $OUT/steps_probe.log
timeout 40 python3 -m ait_build bench build/probe/efficientnet_b0.yaml --dtype float16 --target h200 --batch 128 --steps --prebuilt --runs 20 --json $OUT/steps_b0_b128.json > $OUT/steps_b0_b128.log 2>&1; el "steps b0 rc=$?"
grep -E "^[a-z_0-9]+ +[0-9]+ " $OUT/steps_b0_b128.log
wait
L=$(left 380); [ $L -gt 20 ] && timeout $L python3 -m ait_build bench build/probe/efficientnet_b0.yaml --dtype float16 --target h200 --batch 1,128 --vs torch --prebuilt --json $OUT/vs_torch_b0.json > $OUT/vs_torch_b0.log 2>&1; el "vs torch b0 rc=$?"
grep -E "^\| *batch" $OUT/vs_torch_b0.log
L=$(left 470); [ $L -gt 20 ] && timeout $L python3 -m ait_build bench build/probe/mobilenet_v2.yaml --dtype float16 --target h200 --batch 1,128 --vs torch --prebuilt --json $OUT/vs_torch_mnv2.json > $OUT/vs_torch_mnv2.log 2>&1; el "vs torch mnv2 rc=$?"
grep -E "^\| *batch" $OUT/vs_torch_mnv2.log
grep -E "PASSED|FAILED|passed|failed" $OUT/pytest.log | tail -8
