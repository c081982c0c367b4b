#!/bin/bash
# One call on the GPU machine (docs/import.md): import the seed models from their PyTorch modules
# (bench/import_models.py, float16 specs: float inputs take --dtype, and the export traces in
# float32), build them for h200 in one SCons run, compare each
# with its float32 PyTorch module on the GPU at batch 1 and 8 (bench/import_check.py) and time
# them with `ait-build bench` (batch 1 and 256; BERT at seq 128). Logs and JSON go to $OUT.
set -o pipefail
OUT=${OUT:-gpu-out}
mkdir -p "$OUT" build/imported
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
start=$(date +%s)
imp() {  # name, inputs and dims
  local name=$1; shift
  python3 -m ait_build import torch "bench.import_models:$name" --dtype float16 "$@" \
    -o "build/imported/${name}_imported.yaml" > "$OUT/import_$name.log" 2>&1
  echo "import $name rc=$? $(tail -1 "$OUT/import_$name.log")"
}
imp resnet50 --input image:batch,3,224,224 --dim batch=1:256:64 &
imp vit_b16 --input image:batch,3,224,224 --dim batch=1:256:64 &
imp bert_base --input hidden_states:batch,seq,768 --dim batch=1:256:32 --dim seq=1:4096:128 &
wait
echo "imports in $(( $(date +%s) - start ))s"
specs=$(ls build/imported/*_imported.yaml | paste -sd,)
start=$(date +%s)
timeout "${BUILD_S:-300}" python3 -m SCons -Q -k -j"$(nproc)" target=h200 spec="$specs" cache=build/cache > "$OUT/build.log" 2>&1
echo "build rc=$? in $(( $(date +%s) - start ))s"; grep -m 5 -A5 "error" "$OUT/build.log"
timeout "${CHECK_S:-120}" python3 bench/import_check.py --out "$OUT/import_check.json" 2>&1 | tee "$OUT/check.log"
for case in resnet50:1,256 vit_b16:1,256 bert_base:1,128; do
  name=${case%%:*}
  timeout 90 python3 -m ait_build bench "build/imported/${name}_imported.yaml" --target h200 \
    --batch "${case#*:}" $( [ "$name" = bert_base ] && echo --dim seq=128 ) --json "$OUT/bench_${name}_imported.json" \
    < /dev/null 2>&1 | grep -v "^\[" | tail -6
done
