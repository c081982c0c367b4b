#!/bin/bash
# The bandwidth-bound kernel families on one GPU machine, in one call of at most 8 minutes on 16
# cores (docs/cuda.md): install the carried wheels (.whl: nvidia-cutlass, scons), build the family
# op groups (cuda_op_groups.family_specs: the depthwise convs' small shapes and every ImageNet
# depthwise conv, pools, scales, squeeze-excitation blocks, epilogue activations) and
# bench/gpu_families.py's specs for h200 in one parallel SCons run, run their GPU tests
# (test_gpu_families.py and the float16 groups of test_gpu_numerics), then the benchmark (time,
# GB/s and fraction of the 4.8 TB/s HBM peak of every depthwise conv, pool and scale of
# EfficientNet-B0, MobileNetV3-Large and ConvNeXt at batch 128, PyTorch's time beside each, the
# depthwise kernel's other tiles). Writes to $OUT: build.log, pytest.log, pytest.xml (JUnit),
# errors.jsonl (the tests' error figures), bench.log and families.json. Step limits (seconds):
# BUILD_S, TEST_S, BENCH_S.
set -o pipefail
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi -L; nproc
SPECS=$(python3 tests/backends/cuda/cuda_op_groups.py families),$(python3 bench/gpu_families.py --write-specs) || exit 1
start=$(date +%s)
timeout "${BUILD_S:-200}" python3 -m SCons -Q -k -j"$(nproc)" target=h200 spec="$SPECS" \
  cache=build/cache > "$OUT/build.log" 2>&1
echo "build rc=$? in $(( $(date +%s) - start ))s"
grep -n -A12 -m 20 "error" "$OUT/build.log" | head -60
start=$(date +%s)
AIT_PREBUILT=1 AIT_GPU_REPORT=$OUT/errors.jsonl timeout "${TEST_S:-90}" python3 -m pytest -m gpu \
  tests/backends/cuda -q -p no:cacheprovider -rf --junitxml="$OUT/pytest.xml" -k "(families or \
depthwise or pools_and_scales or squeeze_excitation or epilogue_activations) and not a100 and not \
import" 2>&1 \
  | tee "$OUT/pytest.log" | tail -30
echo "tests rc=$? in $(( $(date +%s) - start ))s"
start=$(date +%s)
timeout "${BENCH_S:-150}" python3 bench/gpu_families.py "$OUT/families.json" --no-build 2>&1 \
  | tee "$OUT/bench.log" | tail -80
echo "bench rc=$? in $(( $(date +%s) - start ))s"
