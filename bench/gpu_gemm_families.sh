#!/bin/bash
# Grouped convs and masked, causal and window attention on one GPU machine, in one call
# (docs/cuda.md): install the carried wheels (.whl: nvidia-cutlass, scons; shared/tools/
# device-wheels.sh), build their op groups (grouped_conv, attention_masks, window_attention, each
# also in bfloat16) for h200 and a100 and bench/gpu_gemm_families.py's specs for h200 in one
# parallel SCons run, run their GPU tests (test_gpu_numerics), then the benchmark (grouped convs
# of ResNeXt101_32x8d and RegNet beside their dense twins and PyTorch, GPT-2 medium's causal
# attention). Logs, errors.jsonl and gemm_families.json go to $OUT. CANDIDATES=1 adds every
# grouped-conv configuration's time (ait-build profile; compiles for a minute more).
set -o pipefail
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi -L; nproc
TEST_GROUPS="grouped_conv attention_masks window_attention"
TESTS=$(cd tests/backends/cuda && python3 -c "
from cuda_op_groups import op_spec
print(','.join(op_spec(g + d) for g in '$TEST_GROUPS'.split() for d in ('', '_bfloat16')))") || exit 1
BENCH=$(python3 bench/gpu_gemm_families.py --write-specs) || exit 1
start=$(date +%s)
timeout "${BUILD_S:-180}" python3 -m SCons -Q -k -j"$(nproc)" target=h200,a100 spec="$TESTS" \
  cache=build/cache > "$OUT/build.log" 2>&1
echo "build rc=$? in $(( $(date +%s) - start ))s"
start=$(date +%s)  # the bench's causal attention is the test groups' kernel: from the cache
timeout "${BENCH_BUILD_S:-200}" python3 -m SCons -Q -k -j"$(nproc)" target=h200 spec="$BENCH" \
  cache=build/cache > "$OUT/build_bench.log" 2>&1
echo "bench build rc=$? in $(( $(date +%s) - start ))s"
grep -n -A12 -m 20 "error" "$OUT/build.log" "$OUT/build_bench.log" | head -60
start=$(date +%s)
AIT_PREBUILT=1 AIT_GPU_REPORT=$OUT/errors.jsonl timeout "${TEST_S:-60}" python3 -m pytest -m gpu \
  tests/backends/cuda/test_gpu_numerics.py -q -p no:cacheprovider -rf \
  -k "grouped_conv or attention_masks or window_attention" 2>&1 | tee "$OUT/pytest.log" | tail -30
echo "tests in $(( $(date +%s) - start ))s"
start=$(date +%s)
timeout "${BENCH_S:-100}" python3 bench/gpu_gemm_families.py "$OUT/gemm_families.json" --no-build \
  ${CANDIDATES:+--candidates} 2>&1 | tee "$OUT/bench.log" | tail -40
echo "bench in $(( $(date +%s) - start ))s"
