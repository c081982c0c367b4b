#!/bin/sh
# Import each exported file with `ait-build import onnx` and compare its cpu build with ONNX
# Runtime on the same file: run_sweep.sh DIR NAME[:FLAGS]... (FLAGS comma-separated, as
# export_onnx.py prints them). One line per model in DIR/sweep.log, details in DIR/NAME.log.
dir=$1; shift
cd "$dir" || exit 1
for item in "$@"; do
  name=${item%%:*}; flags=$(echo "${item#*:}" | tr , ' '); [ "$name" = "$item" ] && flags=
  log=$name.log
  if ! nice -n 19 ait-build import onnx "$name.onnx" $flags -o "$name.yaml" >"$log" 2>&1; then
    echo "$name IMPORT FAILED: $(grep -v '^import:' "$log" | tail -3 | tr '\n' ' ')" >>sweep.log
    continue
  fi
  nodes=$(grep -o '([0-9]* nodes)' "$log")
  extra=; grep -q '^  seq:' "$name.yaml" && extra="--dim seq=8"
  if ! nice -n 19 ait-build bench "$name.yaml" --target cpu --vs onnxruntime --runs 2 \
      --warmup 1 --batch 2 $extra -j 2 >>"$log" 2>&1; then
    echo "$name imported $nodes; BENCH FAILED: $(tail -2 "$log" | tr '\n' ' ')" >>sweep.log
    continue
  fi
  row=$(grep '^| .*batch=2' "$log" | tail -1)
  note=$(grep 'no comparison' "$log" | head -1)
  echo "$name imported $nodes; cpu vs onnxruntime: $row $note" >>sweep.log
done
