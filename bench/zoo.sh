#!/bin/bash
# One call on the GPU machine: the public real-model benchmark (docs/benchmarks.md, "Public
# models"). Installs the carried wheels (.whl: nvidia-cutlass, scons), then runs
# `python3 -m ait_build.bench.zoo --out $OUT` with the arguments given, e.g.
#   bash bench/zoo.sh --quick --budget 480
# Results: $OUT/zoo.json (every figure), zoo.md (the table), zoo.log, import.log, build.log.
set -o pipefail
OUT=${OUT:-zoo-out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi -L; nproc
python3 -m ait_build.bench.zoo --out "$OUT" "$@"
