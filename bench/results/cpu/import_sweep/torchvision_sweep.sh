#!/bin/bash
# import torchvision models outside the zoo as float16 specs, one at a time, niced
cd /work/main
for m in shufflenet_v2_x2_0 inception_v3 squeezenet1_0 mnasnet0_75 mobilenet_v3_small efficientnet_b3 regnet_y_1_6gf wide_resnet50_2 maxvit_t swin_v2_t vgg11_bn alexnet densenet161 vit_b_32 resnext50_32x4d efficientnet_v2_m regnet_y_3_2gf mobilenet_v2 googlenet; do
  size=224; [ $m = inception_v3 ] && size=299
  [ -f /work/scratch/outside/$m.yaml ] && continue
  s=$(date +%s)
  timeout 900 nice -n 19 python3 -m ait_build import torch torchvision.models:$m --input x:batch,3,$size,$size --dtype float16 --dim batch=1:128:8 -o /work/scratch/outside/$m.yaml > /work/scratch/outside/$m.log 2>&1
  echo "$m rc=$? $(( $(date +%s) - s )) s" >> /work/scratch/outside/sweep.log
done
