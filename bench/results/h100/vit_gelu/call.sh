# One device call (after shared/tools/device-wheels.sh; carry .whl, build/zoo and
# build/h200/gpt2_medium built on the machine without a GPU, its weights left behind):
# GPT-2 medium at seq 1024 with the tanh GELU against PyTorch, then every candidate
# configuration of ViT-B/16's and BERT-base's FFN-up GEMM shape with each GELU epilogue and none.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1 || exit
nvidia-smi -L
start=$(date +%s)
timeout 250 python3 -m ait_build.bench.zoo --steps weights,bench --prebuilt --target h200 --models gpt2_medium \
    --seq 1024 --batch 1,16 --budget 240 --out $OUT/gpt2 > $OUT/gpt2.log 2>&1
echo "gpt2 rc=$? $(( $(date +%s)-start ))s"; tail -6 $OUT/gpt2.log
cp profiles/h200.yaml $OUT/vit_ffn_profile.yaml
timeout 300 python3 -m ait_build profile bench/results/h100/vit_gelu/vit_ffn.yaml --target h200 \
    --dim rows=16384,50432 -j 16 -o $OUT/vit_ffn_profile.yaml > $OUT/profile.log 2>&1
echo "profile rc=$? $(( $(date +%s)-start ))s"; grep -v "^\[" $OUT/profile.log | tail -12
cp build/h200/profile/journal.jsonl $OUT/ 2>/dev/null
