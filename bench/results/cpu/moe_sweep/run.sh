#!/bin/bash
# MoE decoders of transformers (tiny configs: ../import_sweep/hf_models4.py), imported with up to
# 4 x 1024 tokens (8192 routed rows; the importer's sort took at most 2048 before it counted
# expert ids), built for cpu and compared with PyTorch float32 at batch 2 x seq 1000.
# Run from anywhere; results in $OUT (default /tmp/moe_sweep).
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-/tmp/moe_sweep}; mkdir -p "$OUT"
export PYTHONPATH=$PWD/bench/results/cpu/import_sweep:$PWD
for m in mixtral qwen2_moe qwen3_moe olmoe phimoe granitemoe deepseek_v3 jetmoe dbrx; do
  t0=$(date +%s)
  timeout 900 python3 -m ait_build import torch hf_models4:$m --input input_ids:batch,seq:int64 \
     --dim seq=2:1024:16 --dim batch=1:4:2 -o $OUT/$m.yaml > $OUT/$m.import.log 2>&1
  echo "$m import rc=$? $(( $(date +%s) - t0 ))s: $(tail -1 $OUT/$m.import.log | cut -c1-150)"
  [ -f $OUT/$m.yaml ] || continue
  timeout 900 python3 -m ait_build bench $OUT/$m.yaml --target cpu --vs torch --runs 2 \
     --batch 2 --dim seq=1000 > $OUT/$m.bench.log 2>&1
  echo "$m bench rc=$?"; tail -1 $OUT/$m.bench.log
done
