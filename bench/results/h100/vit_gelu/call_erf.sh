# Second device call, with the erf GELU as x sigmoid(g(x)) (after shared/tools/device-wheels.sh;
# carry .whl): every candidate configuration of the FFN-up shapes again, all three families in
# the same run, then the GPU tests of the op groups with a GELU.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1 || exit
nvidia-smi -L
start=$(date +%s)
cp profiles/h200.yaml $OUT/vit_ffn_profile.yaml
timeout 300 python3 -m ait_build profile bench/results/h100/vit_gelu/vit_ffn.yaml --target h200 \
    --dim rows=16384,50432 -j 16 -o $OUT/vit_ffn_profile.yaml > $OUT/profile.log 2>&1
echo "profile rc=$? $(( $(date +%s)-start ))s"; grep -v "^\[" $OUT/profile.log | tail -10
cp build/h200/profile/journal.jsonl $OUT/
SPECS=$(python3 tests/backends/cuda/cuda_op_groups.py | tr ',' '\n' | grep -E "cuda_ops_(elementwise|epilogue_activations|gemm|gemm_large|depthwise)\.yaml|tiny_(vit|bert)" | paste -sd,)
timeout 200 python3 -m SCons -Q -k -j16 target=h200 spec="$SPECS" cache=build/cache > $OUT/build.log 2>&1; echo "tests build rc=$? $(( $(date +%s)-start ))s"
AIT_PREBUILT=1 timeout 150 python3 -m pytest -m gpu tests/backends/cuda -q -p no:cacheprovider -rfs -k "h200 and (elementwise or epilogue_activations or gemm or depthwise or tiny_vit or tiny_bert) and not imagenet" 2>&1 | tee $OUT/pytest.log | tail -5
