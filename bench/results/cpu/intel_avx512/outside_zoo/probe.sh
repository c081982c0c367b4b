#!/bin/bash
cd /tmp/probe
for spec in "$@"; do
  m=${spec%%:*}; size=${spec#*:}
  echo "=== $m"
  start=$(date +%s)
  python3 -m ait_build import torch torchvision.models:$m --input x:batch,3,$size,$size -o specs/$m.yaml > $m.import.log 2>&1 || { echo "import failed"; tail -3 $m.import.log; continue; }
  echo "import $(( $(date +%s) - start ))s"
  timeout 1500 python3 -m ait_build bench specs/$m.yaml --target cpu --dtype float32 --vs onnxruntime --runs 10 --warmup 2 -j 2 > $m.bench3.log 2>&1 || { echo "bench failed"; tail -8 $m.bench3.log; continue; }
  tail -1 $m.bench3.log
  echo "total $(( $(date +%s) - start ))s"
done
