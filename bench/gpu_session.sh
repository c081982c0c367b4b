#!/bin/bash
# One call on the GPU machine (docs/cuda.md): install the carried wheels (.whl: nvidia-cutlass,
# scons), build every spec the GPU tests use for h200 and a100 in one parallel SCons run, run
# `pytest -m gpu tests/cuda` on those builds, then time the seed models at batch 1 against
# PyTorch eager. Logs, the per-output errors (errors.jsonl) and the timings go to $OUT.
set -o pipefail
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi -L; nvcc --version | tail -1; nproc
SPECS=$(python3 tests/cuda/cuda_op_groups.py) || exit 1
start=$(date +%s)
timeout "${BUILD_S:-300}" python3 -m SCons -Q -k -j"$(nproc)" target=h200,a100 spec="$SPECS" \
  cache=build/cache > "$OUT/build.log" 2>&1
echo "build rc=$? in $(( $(date +%s) - start ))s"
grep -n -A12 -m 20 "error" "$OUT/build.log" | head -100
start=$(date +%s)
AIT_PREBUILT=1 AIT_GPU_REPORT=$OUT/errors.jsonl timeout "${TEST_S:-140}" python3 -m pytest -m gpu \
  tests/cuda -q -p no:cacheprovider -rf 2>&1 | tee "$OUT/pytest.log" | tail -45
echo "tests in $(( $(date +%s) - start ))s"
start=$(date +%s)
timeout "${BENCH_S:-130}" python3 bench/cuda_bench.py --target h200 --out "$OUT/h200.json" \
  --cases "${CASES:-resnet50:1 bert_base:1x128 vit_b16:1 resnet50:256 bert_base:128x128 vit_b16:256 bert_base:8x4096}" \
  2>&1 | tee "$OUT/bench.log" | tail -8
echo "bench in $(( $(date +%s) - start ))s"
