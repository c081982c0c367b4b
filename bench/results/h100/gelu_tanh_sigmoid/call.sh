python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1 || exit
nvidia-smi -L
B="bench/results/h100/gelu_tanh_sigmoid/gelu_ffn.yaml --target h200 --dim rows=16384 --steps --runs 50"
start=$(date +%s)
timeout 200 python3 -m ait_build bench $B -j 16 --json $OUT/new.json > $OUT/new.log 2>&1; echo "new rc=$? $(( $(date +%s)-start ))s"; grep -A12 "^kernel" $OUT/new.log | head -14
rm -rf /tmp/old && mkdir /tmp/old && cp -r ait_build templates targets profiles bench SConstruct pyproject.toml /tmp/old/ && cp -r build /tmp/old/build 2>/dev/null
(cd /tmp/old && patch -R -p1 < bench/results/h100/gelu_tanh_sigmoid/gelu.patch >/dev/null && PYTHONPATH=/tmp/site:/tmp/old timeout 200 python3 -m ait_build bench $B -j 16 --json $OUT/old.json > $OUT/old.log 2>&1; echo "old rc=$? $(( $(date +%s)-start ))s"; grep -A12 "^kernel" $OUT/old.log | head -14)
SPECS=$(python3 tests/backends/cuda/cuda_op_groups.py | tr ',' '\n' | grep -E "cuda_ops_(elementwise|epilogue_activations)\.yaml" | paste -sd,)
timeout 150 python3 -m SCons -Q -k -j16 target=h200 spec="$SPECS" cache=build/cache > $OUT/build.log 2>&1; echo "tests build rc=$? $(( $(date +%s)-start ))s"
AIT_PREBUILT=1 timeout 90 python3 -m pytest -m gpu tests/backends/cuda -q -p no:cacheprovider -rfs -k "(elementwise or epilogue_activations) and not a100 and not import" 2>&1 | tee $OUT/pytest.log | tail -5
