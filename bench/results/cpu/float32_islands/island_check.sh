#!/bin/bash
# float32 islands in a --dtype float16 import: the LLaMA-shaped decoder at seq 512 built for cpu,
# with and without the island, against PyTorch float32 (rel L2)
cd "$(git rev-parse --show-toplevel)"
for v in island plain; do
  rm -rf /tmp/isl_$v && mkdir -p /tmp/isl_$v
  patch=""; [ $v = plain ] && patch="from_torch.TorchTranslator._float32_island = lambda self, node: None"
  python3 -c "
import sys
from ait_build.importers import from_torch
$patch
from ait_build.cli.main import main
sys.exit(main(['import','torch','ait_build.bench.outside_models:llama_small','--dtype','float16','--input','input_ids:batch,seq:int64','--dim','batch=1:2:1','--dim','seq=1:512:128','-o','/tmp/isl_$v/l.yaml']))" > /tmp/isl_$v/import.log 2>&1
done
for v in island plain; do
  (cd /tmp/isl_$v && python3 -m ait_build bench l.yaml --target cpu --vs torch --batch 1 --dim seq=512 --runs 2 --json b.json > bench.log 2>&1)
done
python3 -c "
import json
for v in ['island','plain']:
    r=json.load(open(f'/tmp/isl_{v}/b.json'))
    for c in r['results']: print(v, c['dims'], c['torch'].get('rel_l2'), c['torch'].get('max_abs_diff'))
" > bench/results/cpu/float32_islands/island_check.out 2>&1
