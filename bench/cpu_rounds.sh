#!/bin/bash
# Rounds of issue 14's comparison: every seed model against ONNX Runtime on the cpu target,
# float32, batch 1 and 8, each round's JSON beside the log. Run it with nothing else on the
# machine; each model's header names the load and the busiest other processes.
#   bench/cpu_rounds.sh ROUNDS [FIRST] [JSON_DIR] > log     (in an environment with ait-build,
#                                                              onnxruntime and torch installed)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}; first=${2:-1}; json=${3:-${TMPDIR:-/tmp}/cpu_rounds}
mkdir -p "$json"
echo "# main at $(git rev-parse --short HEAD): ait-build bench MODEL --target ${TARGET:-cpu} --dtype float32 --batch 1,8 [--dim seq=128] --vs onnxruntime --runs 12 --json F"
echo "# machine: $(nproc) vCPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
for round in $(seq "$first" $((first + rounds - 1))); do
  for model in resnet50 bert_base vit_b16; do
    dim=(); [ "$model" = bert_base ] && dim=(--dim seq=128)
    echo "== round $round $model ${TARGET:-cpu} $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
    ps -eo pcpu,comm --sort=-pcpu --no-headers | head -3 | sed 's/^/#   cpu% /'
    ait-build bench "$model" --target ${TARGET:-cpu} --dtype float32 --batch 1,8 "${dim[@]}" \
      --vs onnxruntime --runs 12 --json "$json/${model}_$round.json" 2>&1 | grep -v "^\[\|^scons\|^wrote"
  done
done
echo "== end $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
