#!/bin/sh
# usage: run_bench.sh NAME...   (from the repository root, after run_import.sh)
for n in "$@"; do
  start=$(date +%s)
  PYTHONPATH=bench/results/cpu/timm_sweep nice -n 19 timeout 600 ait-build bench /tmp/timm/$n.yaml \
    --target cpu --vs torch --runs 2 --batch 1 > /tmp/timm/$n.bench.log 2>&1
  echo "$n rc=$? $(( $(date +%s) - start )) s" >> /tmp/timm/benches.txt
done
