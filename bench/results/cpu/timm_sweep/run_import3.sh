#!/bin/sh
# usage: run_import3.sh NAME H W   (from the repository root); third sweep, /tmp/timm3
n=$1; h=$2; w=$3
start=$(date +%s.%N)
PYTHONPATH=bench/results/cpu/timm_sweep nice -n 19 timeout 300 ait-build import torch timm_models:$n \
  --input x:batch,3,$h,$w --dim batch=1:8:2 -o /tmp/timm3/$n.yaml > /tmp/timm3/$n.import.log 2>&1
rc=$?
end=$(date +%s.%N)
echo "$n rc=$rc $(echo "$end - $start" | bc) s" >> /tmp/timm3/imports.txt
