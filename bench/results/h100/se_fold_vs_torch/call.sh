# One device call (asked for the H200, ran on an H100 80GB HBM3; after shared/tools/device-wheels.sh; carry .whl, build/zoo and the
# two libraries built on the machine without a GPU, `python3 -m ait_build.bench.zoo --steps build
# --target h200 -j 2 --models efficientnet_v2_s,mobilenet_v3_large`, without their weights):
# EfficientNetV2-S and MobileNetV3-Large with the squeeze-excitation gates folded into the
# projections (d4a7259) against PyTorch's best mode, two zoo runs, then their step reports at
# the large batch; first bench/graph_replay.cu (a CUDA graph's replay cost per kernel). Everything it writes goes into one tar in $OUT.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1 || exit
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
R=$OUT/se_fold_gpu; mkdir -p $R; M=efficientnet_v2_s,mobilenet_v3_large
nvcc -O2 -std=c++17 -arch=sm_90a -o /tmp/graph_replay bench/graph_replay.cu && /tmp/graph_replay > $R/graph_replay.txt 2>&1; el "graph replay rc=$?"; cat $R/graph_replay.txt
python3 -m ait_build.bench.zoo --steps weights --target h200 --models $M 2>&1 | tail -2; el weights
for r in 1 2; do
  python3 -m ait_build.bench.zoo --steps bench --prebuilt --target h200 --models $M --batch 1,128 \
    --budget 200 --out $R/zoo_r$r > $R/zoo_r$r.log 2>&1; el "zoo run $r"; tail -6 $R/zoo_r$r.log
done
for m in efficientnet_v2_s mobilenet_v3_large; do
  python3 -m ait_build bench build/zoo/$m.yaml --target h200 --prebuilt --batch 128 --steps --runs 20 \
    --json $R/steps_${m}_b128.json > $R/steps_${m}_b128.txt 2>&1; el "steps $m"
done
tar -C $OUT -czf $OUT/se_fold_gpu.tgz se_fold_gpu && rm -rf $R
