#!/bin/bash
# device call: the channel-concat kernel (85c455a) on a GPU: GPU tests of the shape and concat_norms
# groups (h200 and a100 builds), then GoogLeNet / Inception-v3 / SqueezeNet imports timed with the
# concat kernel (this tree) against the copy per piece (85c455a^, build/old), taking turns
set -o pipefail
T0=$(date +%s); t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
NEW=$PWD; OLD=$PWD/build/old
export PYTHONPATH=/tmp/site:$NEW
nvidia-smi --query-gpu=name --format=csv,noheader; nproc
R=/tmp/resC1; mkdir -p $R build/probe
CNN="googlenet inception_v3 squeezenet1_1"
t imports
for m in $CNN; do
  hw=224; [ $m = inception_v3 ] && hw=299
  python3 -m ait_build import torch torchvision.models:$m --input x:batch,3,$hw,$hw --dim batch=1:128:8 -o build/probe/$m.yaml > $R/import_$m.log 2>&1 &
done
python3 tests/backends/cuda/cuda_op_groups.py > /dev/null
wait
t "imports done"; ls build/probe
GROUPS_=$NEW/build/specs/cuda_ops_shape.yaml,$NEW/build/specs/cuda_ops_concat_norms.yaml
F16=$(python3 -c "
import os
from ait_build.bench.run import dtype_variant
print(','.join(os.path.abspath(dtype_variant('build/probe/%s.yaml' % m, 'float16', '.')) for m in '$CNN'.split() if os.path.exists('build/probe/%s.yaml' % m)))")
echo "$F16"
t "build new (groups h200,a100 + models h200)"
timeout 200 python3 -m SCons -Q -k -j16 target=h200,a100 spec=$GROUPS_ cache=/tmp/scache > $R/build_groups.log 2>&1; echo "rc $?"
timeout 250 python3 -m SCons -Q -k -j16 target=h200 spec=$F16 cache=/tmp/scache > $R/build_new.log 2>&1; echo "rc $?"
tail -2 $R/build_new.log
t "GPU tests shape/concat_norms"
AIT_PREBUILT=1 AIT_GPU_REPORT=$R/errors.jsonl timeout 150 python3 -m pytest -m gpu -p no:cacheprovider -q -n 0 tests/backends/cuda/test_gpu_numerics.py -k "shape or concat_norms" > $R/pytest.log 2>&1; echo "rc $?"
tail -4 $R/pytest.log
t "build old"
(cd $OLD && PYTHONPATH=/tmp/site:$OLD timeout 200 python3 -m SCons -Q -k -j16 target=h200 spec=$F16 cache=/tmp/scache > $R/build_old.log 2>&1; echo "rc $?")
tail -2 $R/build_old.log
for r in 1 2; do
  for side in old new; do
    for s in ${F16//,/ }; do
      n=$(basename $s .yaml)
      left=$(( 540 - ($(date +%s) - T0) )); [ $left -lt 20 ] && break 3
      t "$side $n round $r"
      if [ $side = old ]; then dir=$OLD; else dir=$NEW; fi
      (cd $dir && PYTHONPATH=/tmp/site:$dir timeout $left python3 -m ait_build bench $s --target h200 --batch 1,128 --prebuilt --runs 200 --json $R/${n}_${side}_r$r.json 2>&1 | grep -E "^\|" | tail -3)
    done
  done
done
for s in ${F16//,/ }; do
  n=$(basename $s .yaml)
  left=$(( 580 - ($(date +%s) - T0) )); [ $left -lt 60 ] && break
  t "vs torch $n"
  timeout $left python3 -m ait_build bench $s --target h200 --batch 1,128 --prebuilt --vs torch --json $R/${n}_vs_torch.json > $R/${n}_vs_torch.log 2>&1; grep -E "^\|" $R/${n}_vs_torch.log | tail -3
done
(cd /tmp && tar czf $OUT/resC1.tgz resC1)
t done
