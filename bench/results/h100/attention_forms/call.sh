#!/bin/bash
# attention fused in three forms users bring: Swin V2-T (cosine), MaxViT-T (two batch axes),
# an nn.MultiheadAttention encoder called the default way (heads in the batch); against PyTorch
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
start=$(date +%s); nvidia-smi --query-gpu=name --format=csv,noheader
el() { echo "$1 at $(( $(date +%s) - start ))s"; }
pack() { cd $OUT && tar czf all.tgz *.log *.json 2>/dev/null && rm -f *.log *.json; }
trap pack EXIT
mkdir -p build/probe
python3 -m ait_build import torch bench.results.cpu.intel_avx512.attention_forms.models:mha_encoder --input x:batch,seq,512 --dim batch=1:32:8 --dim seq=1:512:256 -o build/probe/mha_encoder.yaml > $OUT/import_mha.log 2>&1 &
python3 -m ait_build import torch torchvision.models:swin_v2_t --input x:batch,3,256,256 --dim batch=1:64:8 -o build/probe/swin_v2_t.yaml > $OUT/import_swin.log 2>&1 &
python3 -m ait_build import torch torchvision.models:maxvit_t --input x:batch,3,224,224 --dim batch=1:64:8 -o build/probe/maxvit_t.yaml > $OUT/import_maxvit.log 2>&1 &
wait; el imports
SPECS=$(python3 -c "
from ait_build.bench.run import dtype_variant
print(','.join(dtype_variant('build/probe/%s.yaml' % m, 'float16', '.') for m in ('mha_encoder', 'swin_v2_t', 'maxvit_t')))")
timeout 360 python3 -m SCons -Q -k -j16 target=h200 spec=$SPECS cache=build/cache > $OUT/build.log 2>&1; el "build rc=$?"; grep -c "compiling" $OUT/build.log; tail -3 $OUT/build.log
for m in mha_encoder swin_v2_t maxvit_t; do
  left=$(( 585 - ($(date +%s) - start) )); [ $left -lt 20 ] && break
  [ $m = mha_encoder ] && B="--batch 1,16 --dim seq=256" || B="--batch 1,32"
  timeout $(( left > 90 ? 90 : left )) python3 -m ait_build bench build/probe/$m.yaml --dtype float16 --target h200 $B --vs torch --prebuilt --json $OUT/vs_torch_$m.json > $OUT/vs_torch_$m.log 2>&1; el "$m vs torch rc=$?"; grep -E "^\| *(batch|dims)" $OUT/vs_torch_$m.log
done
