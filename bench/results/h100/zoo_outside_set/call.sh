#!/bin/bash
# The zoo's outside set on the GPU. Libraries built on the machine without a GPU come carried
# without weights or objects (build/carry_h200, specs in build/carry_zoo); the models in
# $BUILD_MODELS are built here in the background (-j $JOBS) while the others are timed; then
# weights from the specs' seeds and `ait-build bench --vs torch` per model of $MODELS in order.
OUT=${OUT:-gpu-out}; mkdir -p "$OUT/zoo"
export PYTHONUNBUFFERED=1
start=$(date +%s)
nvidia-smi -L; nproc
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH
if [ -d build/carry_h200 ] && [ ! -f build/.carried ]; then
  mkdir -p build/h200 build/zoo
  cp -r build/carry_h200/* build/h200/ && cp build/carry_zoo/* build/zoo/ && touch build/.carried
fi
if [ -n "$BUILD_MODELS" ]; then
  ( python3 -m ait_build.bench.zoo --steps build --target h200 -j ${JOBS:-10} --models $BUILD_MODELS \
      --out build/devbuild > build/devbuild.log 2>&1; echo "device build done at $(( $(date +%s) - start ))s" >> build/devbuild.log ) &
fi
left=$(( ${BUDGET:-560} - ($(date +%s) - start) ))
timeout $left python3 -m ait_build.bench.zoo --steps ${STEPS:-weights,bench} --prebuilt \
   --target h200 --models ${MODELS:?} --budget $(( left - 15 )) --out $OUT/zoo \
   > $OUT/zoo_stdout.log 2> $OUT/zoo_stderr.log
echo "rc=$? at $(( $(date +%s) - start ))s"
grep -v ": batch\|: case" $OUT/zoo_stderr.log | tail -30 | cut -c1-220
cat $OUT/zoo/zoo.md 2>/dev/null
while [ -n "$(jobs -r)" ] && [ $(( $(date +%s) - start )) -lt $(( ${BUDGET:-560} + 10 )) ]; do sleep 5; done
[ -f build/devbuild.log ] && { tail -3 build/devbuild.log; cp build/devbuild.log $OUT/; }
cp build/zoo/reports/*.json $OUT/zoo/ 2>/dev/null
cd $OUT && tar czf results.tgz zoo *.log && rm -rf zoo *.log
