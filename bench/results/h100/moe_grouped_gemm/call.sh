#!/bin/bash
# grouped_matmul on the GPU: the op groups' GPU tests (experts: CUTLASS's grouped GEMM and our
# kernel; import_families: permute_elements), then the Mixtral-shaped decoder built here and
# timed against PyTorch at batch 1 and 16 (seq 128).
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
start=$(date +%s)
nvidia-smi -L | tee $OUT/card_r.txt; nproc
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH
mkdir -p build/zoo && cp build/carry_moe/* build/zoo/
( python3 -m ait_build.bench.zoo --set outside --steps build --target h200 -j 12 --models mixtral_small,llama_small,qwen2_small \
    --out build/devbuild_moe > $OUT/build_moe.log 2>&1; echo "mixtral build rc=$? at $(( $(date +%s) - start ))s" >> $OUT/build_moe.log ) &
timeout 300 python3 -m pytest -q -p no:cacheprovider -m gpu -n 0 tests/backends/cuda/test_gpu_numerics.py \
    -k "experts or import_families" > $OUT/pytest_gpu.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - start ))s"; tail -15 $OUT/pytest_gpu.log
wait
tail -3 $OUT/build_moe.log
left=$(( ${BUDGET:-570} - ($(date +%s) - start) ))
timeout $left python3 -m ait_build.bench.zoo --set outside --steps weights,bench --prebuilt \
   --target h200 --models mixtral_small,llama_small,qwen2_small --budget $(( left - 15 )) --out $OUT/zoo_moe \
   > $OUT/zoo_moe_stdout.log 2> $OUT/zoo_moe_stderr.log
echo "bench rc=$? at $(( $(date +%s) - start ))s"
grep -v ": batch\|: case" $OUT/zoo_moe_stderr.log | tail -12 | cut -c1-220
cat $OUT/zoo_moe/zoo.md 2>/dev/null
