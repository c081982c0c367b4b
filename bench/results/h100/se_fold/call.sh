# One device call (after shared/tools/device-wheels.sh; carry .whl and build/zoo): the
# squeeze-excitation gates folded into the projections' weights (se_fold.patch) against the
# tree without it (the patch reversed in /tmp/old), both built here: the GPU tests of the op
# groups with gates, step reports of EfficientNetV2-S at batch 128, then the two libraries
# timed alternately, the side that goes first swapped each round.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1 || exit
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
R=bench/results/h100/se_fold; ZOO=build/zoo/efficientnet_v2_s.yaml,build/zoo/mobilenet_v3_large.yaml
rm -rf /tmp/old && mkdir -p /tmp/old/build && cp -r ait_build templates targets profiles specs SConstruct pyproject.toml /tmp/old/ \
  && cp -r build/zoo /tmp/old/build/ && (cd /tmp/old && patch -s -R -p1 < $OLDPWD/$R/se_fold.patch) || exit
python3 -m SCons -Q -k -j16 target=h200 spec=$ZOO cache=$PWD/build/cache > $OUT/build_new.log 2>&1; el "new built rc=$?"
(cd /tmp/old && PYTHONPATH=/tmp/site:/tmp/old python3 -m SCons -Q -k -j16 target=h200 spec=$ZOO cache=$OLDPWD/build/cache > $OUT/build_old.log 2>&1); el "old built rc=$?"
SPECS=$(python3 tests/backends/cuda/cuda_op_groups.py | tr ',' '\n' | grep -E "cuda_ops_(squeeze_excitation|pools_and_scales)\.yaml" | paste -sd,)
python3 -m SCons -Q -k -j16 target=h200,a100 spec="$SPECS" cache=build/cache > $OUT/build_tests.log 2>&1; el "tests built rc=$?"
AIT_PREBUILT=1 timeout 120 python3 -m pytest -m gpu tests/backends/cuda -q -p no:cacheprovider -rfs -k "squeeze_excitation or pools_and_scales" 2>&1 | tee $OUT/pytest.log | tail -3
B="--target h200 --prebuilt"
python3 -m ait_build bench build/zoo/efficientnet_v2_s.yaml $B --batch 128 --steps --runs 20 --json $OUT/steps_effnet_b128_new.json > $OUT/steps_effnet_b128_new.txt 2>&1
(cd /tmp/old && PYTHONPATH=/tmp/site:/tmp/old python3 -m ait_build bench build/zoo/efficientnet_v2_s.yaml $B --batch 128 --steps --runs 20 --json $OUT/steps_effnet_b128_old.json > $OUT/steps_effnet_b128_old.txt 2>&1)
el "steps"
bench() {  # side model batch runs
  if [ $1 = new ]; then dir=$PWD; else dir=/tmp/old; fi
  (cd $dir && PYTHONPATH=/tmp/site:$dir python3 -m ait_build bench build/zoo/$2.yaml $B --batch $3 --runs $4 \
    --json $OUT/ab_${2}_b$3_$1_$k.json > $OUT/ab_${2}_b$3_$1_$k.txt 2>&1)
  grep -E "^\| (batch|dims)" $OUT/ab_${2}_b$3_$1_$k.txt | tail -n 1 | sed "s/^/$1 $2: /"
}
pair() { if [ $((k % 2)) = 1 ]; then bench old "$@"; bench new "$@"; else bench new "$@"; bench old "$@"; fi; }
for k in 1 2 3 4; do
  pair efficientnet_v2_s 128 30; pair mobilenet_v3_large 128 100; pair efficientnet_v2_s 1 300; pair mobilenet_v3_large 1 300
  el "round $k"; [ $(( $(date +%s) - T0 )) -gt 440 ] && break
done
