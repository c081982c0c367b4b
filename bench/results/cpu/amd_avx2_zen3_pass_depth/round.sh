#!/bin/bash
# one round of the seven public CNNs against ONNX Runtime on this AVX2 machine (AMD Zen 3, 2 vCPUs)
# bash bench/results/cpu/amd_avx2_zen3_pass_depth/round.sh N
cd "$(dirname "$0")/../../../.."
D=bench/results/cpu/amd_avx2_zen3_pass_depth
R=$1
for m in regnet_x_3_2gf mobilenet_v3_large shufflenet_v2_x1_0 resnext101_32x8d efficientnet_v2_s convnext_small densenet121; do
  echo "== $m $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  python3 -m ait_build bench build/zoo/$m.yaml --target cpu --dtype float32 --vs onnxruntime --batch 1 --runs 20 --json $D/${m}_b1_r$R.json 2>&1 | grep -E "^batch=|error"
done
