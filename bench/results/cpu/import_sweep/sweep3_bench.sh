#!/bin/bash
cd "$(dirname "$0")/../../../.."
for n in "$@"; do
  PYTHONPATH=bench/results/cpu/import_sweep nice -n 10 timeout 600 python3 -m ait_build bench /tmp/hf3/$n.yaml --target cpu --vs torch --runs 2 --batch 1 > /tmp/hf3/$n.bench.log 2>&1
  echo "$n rc=$? $(grep -E '^\| batch' /tmp/hf3/$n.bench.log | tr -s ' ')" >> /tmp/hf3/bench.txt
done
