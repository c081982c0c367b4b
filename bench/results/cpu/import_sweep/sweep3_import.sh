#!/bin/bash
cd "$(dirname "$0")/../../../.."
for n in "$@"; do
  case $n in
    qwen2|mistral|gpt_neox|falcon|mpt|rwkv|mamba|electra|mpnet|ibert) inp="--input input_ids:batch,seq:int64 --dim batch=1:2:1 --dim seq=2:32:8";;
    swin2sr) inp="--input pixel_values:batch,3,32,32 --dim batch=1:2:1";;
    dpt_dinov2) inp="--input pixel_values:batch,3,56,56 --dim batch=1:2:1";;
    *) inp="--input pixel_values:batch,3,64,64 --dim batch=1:2:1";;
  esac
  start=$(date +%s)
  PYTHONPATH=bench/results/cpu/import_sweep nice -n 10 timeout 300 python3 -m ait_build import torch hf_models3:$n $inp -o /tmp/hf3/$n.yaml > /tmp/hf3/$n.log 2>&1
  echo "$n rc=$? $(( $(date +%s) - start )) s: $(grep -m1 -A1 'error' /tmp/hf3/$n.log | tr '\n' ' ' | cut -c1-250)" >> /tmp/hf3/results.txt
done
