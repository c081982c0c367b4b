#!/bin/bash
# One call on the GPU machine (docs/cuda.md): install the carried wheels (.whl: nvidia-cutlass,
# scons), build every spec the GPU tests use for h200 and a100 in one parallel SCons run, run
# `pytest -m gpu tests/cuda` on those builds, then time the seven anchor cases (CASES) with
# `ait-build bench --vs torch`: PyTorch eager, eager + CUDA graph and torch.compile. Logs, the
# per-output errors (errors.jsonl) and the timings go to $OUT.
set -o pipefail
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
# PACK=1: on the way out, pack everything under $OUT into one results.tgz (a device call brings
# back at most 8 files)
pack() { [ "${PACK:-0}" = 1 ] && (cd "$OUT" && tar czf /tmp/results.tgz . && find . -type f -delete \
  && mv /tmp/results.tgz results.tgz); }
trap pack EXIT
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi -L; nvcc --version | tail -1; nproc
# a shorter session: SPECS (comma-separated spec paths), TARGETS and PYTEST_K (pytest -k) narrow
# the build and the tests; STEPS (default build,tests,bench) picks the steps, so one session can
# span several device calls while the machine stays warm (its build/ stays); PROFILE (cases, as
# CASES) adds per-kernel times (bench/cuda_profile.py)
STEPS=${STEPS:-build,tests,bench}
step() { [[ ",$STEPS," == *",$1,"* ]]; }
# profile (not a default step): measure the kernel candidates with harnesses that
# `ait-build profile ... --compile-only` built on another machine; they travel as
# .carry/profile/<target>/<group>/{harness,harness.digest} (PROFILE_SPECS, PROFILE_TARGETS,
# PROFILE_BATCH); the profiles and journals go to $OUT
if step profile; then
  for t in ${PROFILE_TARGETS:-h200}; do
    start=$(date +%s)
    mkdir -p "build/$t/profile" && cp -r ".carry/profile/$t/." "build/$t/profile/"
    timeout "${PROFILE_S:-400}" python3 -m ait_build profile ${PROFILE_SPECS:-resnet50 vit_b16 bert_base} \
      --target "$t" --batch "${PROFILE_BATCH:-1,128,256}" --measure-only 2>&1 | tee "$OUT/profile_$t.log" | tail -25
    cp "profiles/$t.yaml" "$OUT/profile_$t.yaml"; cp "build/$t/profile/journal.jsonl" "$OUT/journal_$t.jsonl"
    echo "profile $t in $(( $(date +%s) - start ))s"
  done
fi
# buildtimes (not a default step): ResNet-50 for h200 without a cache: cold, after one layer
# changes (fc's out_features), then with nothing changed; the spec is restored after
if step buildtimes; then
  cp specs/resnet50.yaml /tmp/resnet50.yaml
  for phase in cold one-layer no-op; do
    [ "$phase" = one-layer ] && sed -i 's/out_features: 1000}/out_features: 1008}/' specs/resnet50.yaml
    [ "$phase" = cold ] && rm -rf build/h200/resnet50
    start=$(date +%s%N)
    python3 -m SCons -Q -j"$(nproc)" target=h200 model=resnet50 cache= >> "$OUT/buildtimes.log" 2>&1
    echo "resnet50 h200 $phase build rc=$? in $(( ($(date +%s%N) - start) / 1000000 )) ms" | tee -a "$OUT/buildtimes.txt"
  done
  cp /tmp/resnet50.yaml specs/resnet50.yaml
fi
# profilecold (not a default step): the whole profile on this machine, compile included, as a
# user with a GPU and no carried harnesses runs it; the profile goes to $OUT, the checked-in one
# stays as it is
if step profilecold; then
  start=$(date +%s)
  timeout "${PROFILE_S:-540}" python3 -m ait_build profile ${PROFILE_SPECS:-resnet50 vit_b16 bert_base} \
    --target h200 --batch "${PROFILE_BATCH:-1,128,256}" -j"$(nproc)" --fresh -o "$OUT/profile_cold_h200.yaml" \
    2>&1 | tee "$OUT/profile_cold.log" | grep -v "^  " | tail -20
  echo "profile with compilation in $(( $(date +%s) - start ))s"
fi
SPECS=${SPECS:-$(python3 tests/cuda/cuda_op_groups.py)} || exit 1
if step build; then
start=$(date +%s)
timeout "${BUILD_S:-420}" python3 -m SCons -Q -k -j"$(nproc)" target="${TARGETS:-h200,a100}" spec="$SPECS" \
  cache=build/cache > "$OUT/build.log" 2>&1
echo "build rc=$? in $(( $(date +%s) - start ))s"
grep -n -A12 -m 20 "error" "$OUT/build.log" | head -100
fi
if step tests; then
start=$(date +%s)
AIT_PREBUILT=1 AIT_GPU_REPORT=$OUT/errors.jsonl timeout "${TEST_S:-360}" python3 -m pytest -m gpu \
  tests/cuda -q -p no:cacheprovider -rf ${PYTEST_K:+-k "$PYTEST_K"} 2>&1 | tee "$OUT/pytest.log" | tail -45
echo "tests in $(( $(date +%s) - start ))s"
fi
step bench || exit 0
# the bench: `ait-build bench --vs torch` once per model, seq and torch.compile mode (CASES:
# model:batch or bert_base:batchxseq, with @MODE for a case's own torch.compile mode: the
# batch-1 cases take reduce-overhead, whose CUDA graphs are PyTorch's best there), each writing
# $OUT/h200_<model>[_seq<N>]_b<batches>.json after every case; all of them within BENCH_S
# seconds (default 240: torch.compile takes tens of seconds a case). COMPILE_MODE (default
# `default`; none leaves torch.compile out everywhere) is the mode of cases without @MODE.
start=$(date +%s)
python3 - "${CASES:-resnet50:1@reduce-overhead bert_base:1x128@reduce-overhead vit_b16:1@reduce-overhead resnet50:256 bert_base:128x128 vit_b16:256 bert_base:8x4096}" \
  "${COMPILE_MODE:-default}" > "$OUT/bench_groups.txt" <<'PY' || exit 1
import sys
from ait_build.bench.cuda import parse_case
groups = {}
for case in sys.argv[1].split():  # model:batch[xseq][@torch.compile mode]
    case, _, mode = case.partition("@")
    name, dims = parse_case(case)
    mode = mode if mode and sys.argv[2] != "none" else sys.argv[2]
    groups.setdefault((name, str(dims.get("seq", "")), mode), []).append(str(dims["batch"]))
for (name, seq, mode), batches in groups.items():
    print(name, ",".join(batches), mode, seq)
PY
while read -r model batches mode seq; do
  left=$(( ${BENCH_S:-240} - ($(date +%s) - start) ))
  [ "$left" -gt 0 ] || { echo "bench: no time left for $model batch $batches ${seq:+seq $seq}"; break; }
  timeout "$left" python3 -m ait_build bench "$model" --target h200 --batch "$batches" \
    ${seq:+--dim seq="$seq"} --vs torch --compile-mode "$mode" \
    --json "$OUT/h200_${model}${seq:+_seq$seq}_b${batches//,/_}.json" < /dev/null 2>&1 | tee -a "$OUT/bench.log" | tail -12
done < "$OUT/bench_groups.txt"
echo "bench in $(( $(date +%s) - start ))s"
if [ -n "${PROFILE:-}" ]; then
  timeout "${PROFILE_S:-90}" python3 bench/cuda_profile.py --target h200 --out "$OUT/profile.json" \
    --cases "$PROFILE" 2>&1 | tee "$OUT/profile.log" | tail -60
fi
