#!/bin/bash
# One round of the public CNNs against ONNX Runtime on cpu at batch 1 (float32 copies of the
# imported specs in build/zoo, `ait-build bench --vs onnxruntime`), each model's JSON written to
# DIR as NAME_b1_rN.json; the seven CNNs unless models are named:
#   bash bench/cpu_ort_round.sh DIR N [MODEL ...]
cd "$(dirname "$0")/.."
D=$1
R=$2
shift 2
MODELS=${*:-regnet_x_3_2gf mobilenet_v3_large shufflenet_v2_x1_0 resnext101_32x8d efficientnet_v2_s convnext_small densenet121}
for m in $MODELS; do
  echo "== $m $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  python3 -m ait_build bench build/zoo/$m.yaml --target cpu --dtype float32 --vs onnxruntime --batch 1 --runs 20 --json $D/${m}_b1_r$R.json 2>&1 | grep -E "^batch=|error"
done
