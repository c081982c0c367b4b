# A later device call: EfficientNetV2-S with the gates folded against PyTorch in the same run
# (the zoo benchmark), the library built on the machine without a GPU and carried without its
# weights (with .whl and build/zoo); the weights step writes them again from the spec's seed.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1 || exit
nvidia-smi -L
python3 -m ait_build.bench.zoo --steps weights,bench --prebuilt --target h200 --models efficientnet_v2_s \
    --batch 1,128 --budget 170 --out $OUT/zoo 2>&1 | tail -6
