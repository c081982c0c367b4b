#!/bin/bash
# One call on the GPU machine (docs/cuda.md): install the carried wheels (.whl: nvidia-cutlass,
# scons), build every spec the GPU tests use for h200 and a100 in one parallel SCons run, run
# `pytest -m gpu tests/cuda` on those builds, then time the seven anchor cases (CASES) against
# PyTorch eager and eager + CUDA graph. Logs, the per-output errors (errors.jsonl) and the timings go to $OUT.
set -o pipefail
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi -L; nvcc --version | tail -1; nproc
# a shorter session: SPECS (comma-separated spec paths), TARGETS and PYTEST_K (pytest -k) narrow
# the build and the tests; PROFILE (cases, as CASES) adds per-kernel times (bench/cuda_profile.py)
SPECS=${SPECS:-$(python3 tests/cuda/cuda_op_groups.py)} || exit 1
start=$(date +%s)
timeout "${BUILD_S:-300}" python3 -m SCons -Q -k -j"$(nproc)" target="${TARGETS:-h200,a100}" spec="$SPECS" \
  cache=build/cache > "$OUT/build.log" 2>&1
echo "build rc=$? in $(( $(date +%s) - start ))s"
grep -n -A12 -m 20 "error" "$OUT/build.log" | head -100
start=$(date +%s)
AIT_PREBUILT=1 AIT_GPU_REPORT=$OUT/errors.jsonl timeout "${TEST_S:-140}" python3 -m pytest -m gpu \
  tests/cuda -q -p no:cacheprovider -rf ${PYTEST_K:+-k "$PYTEST_K"} 2>&1 | tee "$OUT/pytest.log" | tail -45
echo "tests in $(( $(date +%s) - start ))s"
start=$(date +%s)
timeout "${BENCH_S:-130}" python3 bench/cuda_bench.py --target h200 --out "$OUT/h200.json" \
  --cases "${CASES:-resnet50:1 bert_base:1x128 vit_b16:1 resnet50:256 bert_base:128x128 vit_b16:256 bert_base:8x4096}" \
  2>&1 | tee "$OUT/bench.log" | tail -8
echo "bench in $(( $(date +%s) - start ))s"
if [ -n "${PROFILE:-}" ]; then
  timeout "${PROFILE_S:-90}" python3 bench/cuda_profile.py --target h200 --out "$OUT/profile.json" \
    --cases "$PROFILE" 2>&1 | tee "$OUT/profile.log" | tail -60
fi
