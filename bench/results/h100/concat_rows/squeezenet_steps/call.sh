#!/bin/bash
# device call: GPU tests of the run-time placer (op groups at batch 1 then 5, tiny_vit replays)
# and of strided slices over a symbolic size (symbolic_strides group); then SqueezeNet 1.1 at
# batch 1 with the concat kernel (this tree) and without (build/old = 85c455a^), --steps each
set -o pipefail
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
NEW=$PWD; OLD=$PWD/build/old
export PYTHONPATH=/tmp/site:$NEW
nvidia-smi --query-gpu=name --format=csv,noheader; nproc
R=/tmp/resG1; mkdir -p $R build/probe
t "import squeezenet"
python3 -m ait_build import torch torchvision.models:squeezenet1_1 --input x:batch,3,224,224 --dim batch=1:128:8 -o build/probe/squeezenet1_1.yaml > $R/import.log 2>&1 &
G="symbolic_strides shape elementwise lookup resizes pools_and_scales depthwise masks_and_clamps gemm conv"
SPECS=$(cd tests/backends/cuda && python3 -c "
from cuda_op_groups import op_spec
from cuda_helpers import fp16_spec
print(','.join([op_spec(g) for g in '$G'.split()] + [fp16_spec('tiny_vit')]))")
wait
SQ=$(python3 -c "
import os
from ait_build.bench.run import dtype_variant
print(os.path.abspath(dtype_variant('build/probe/squeezenet1_1.yaml', 'float16', '.')))")
t "build groups + squeezenet (new)"
timeout 280 python3 -m SCons -Q -k -j16 target=h200 spec=$SPECS,$SQ cache=/tmp/scache > $R/build_new.log 2>&1; echo "rc $?"
tail -2 $R/build_new.log
t "GPU tests"
AIT_PREBUILT=1 AIT_GPU_REPORT=$R/errors.jsonl timeout 150 python3 -m pytest -m gpu -p no:cacheprovider -q -n 0 tests/backends/cuda/test_gpu_numerics.py \
  -k "(op_matches and h200 and ($(echo $G | sed 's/ / or /g'))) or graph_replays or alternating" > $R/pytest.log 2>&1; echo "rc $?"
tail -4 $R/pytest.log
t "build old squeezenet"
(cd $OLD && PYTHONPATH=/tmp/site:$OLD timeout 150 python3 -m SCons -Q -k -j16 target=h200 spec=$SQ cache=/tmp/scache > $R/build_old.log 2>&1; echo "rc $?")
for r in 1 2; do
  for side in old new; do
    left=$(( 560 - ($(date +%s) - T0) )); [ $left -lt 20 ] && break 2
    if [ $side = old ]; then dir=$OLD; else dir=$NEW; fi
    t "$side steps round $r"
    (cd $dir && PYTHONPATH=/tmp/site:$dir timeout $left python3 -m ait_build bench $SQ --target h200 --batch 1 --prebuilt --steps --runs 200 --json $R/sq_${side}_steps_r$r.json > $R/sq_${side}_steps_r$r.log 2>&1; grep -E "^\|" $R/sq_${side}_steps_r$r.log | head -4)
  done
done
(cd /tmp && tar czf $OUT/resG1.tgz resG1)
t done
