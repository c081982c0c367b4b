#!/bin/sh
# usage: run_bench3.sh NAME...   (from the repository root, after run_import3.sh); third sweep
for n in "$@"; do
  start=$(date +%s)
  PYTHONPATH=bench/results/cpu/timm_sweep nice -n 19 timeout 600 ait-build bench /tmp/timm3/$n.yaml \
    --target cpu --vs torch --runs 2 --batch 1 > /tmp/timm3/$n.bench.log 2>&1
  echo "$n rc=$? $(( $(date +%s) - start )) s" >> /tmp/timm3/benches.txt
done
