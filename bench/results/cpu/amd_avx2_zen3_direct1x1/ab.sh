#!/bin/bash
# the 1x1 direct path's wider rule (72 input channels, rows that fill the 6-pixel tiles) against
# the old one (32 channels into whole 16-float vectors), one process per model and thread count,
# the two libraries taking turns (bench/cpu_ab.py, step minimums). build/ab_base/NAME: the
# library built on the commit before; build/cpu/NAME: after.
#   bash bench/results/cpu/amd_avx2_zen3_direct1x1/ab.sh MODEL... (e.g. mobilenet_v3_large_float32)
cd "$(dirname "$0")/../../../.."
D=bench/results/cpu/amd_avx2_zen3_direct1x1
for m in "$@"; do
  for t in 1 2; do
    AIT_NUM_THREADS=$t python3 bench/cpu_ab.py build/ab_base/$m build/cpu/$m --batch 1 --runs 30 --nodes \
      > $D/ab_${m}_t$t.log 2>&1
  done
done
