#!/usr/bin/env bash
# Tunes the PyTorch peer's FIL step on the GPU before a dpfil ÷ torch ratio is
# claimed (docs/perf.md): both jvp formulations (fwd: jvp through the clipped
# gradient; rev: vjp of the jvp) × sample chunk sizes, B = 600 mnist-cnn and
# B = 200 cifar-cnn, k = 50, TF32 off. One JSON line per configuration in
# $OUT/peer-tune.jsonl (a configuration that runs out of memory or time is logged
# and skipped). On a GPU host (a device call; needs no Go):
#
#   scripts/gpu-peer-tune.sh            # SECS (default 3) per configuration
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-out/gpu-peer-tune}
mkdir -p "$OUT"
SECS=${SECS:-3}
f=$OUT/peer-tune.jsonl
: >"$f"
for spec in "mnist-cnn 600 50 100 200 600" "cifar-cnn 200 50 10 25 50 100"; do
  set -- $spec
  model=$1 b=$2 k=$3
  shift 3
  for jv in fwd rev; do
    for chunk in "$@"; do
      echo "peer-tune: $model fil $jv chunk $chunk" >&2
      TORCH_DEVICE=cuda timeout 60 python3 scripts/bench-torch/torch_peer.py time "$model" fil "$b" "$k" "$SECS" "$jv" "$chunk" >>"$f" 2>>"$OUT/peer-tune.log" ||
        echo "peer-tune: $model $jv chunk $chunk failed (exit $?, see peer-tune.log)" >&2
    done
  done
done
python3 - "$f" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"{r['model']:10s} {r['jvp']:4s} chunk {r['chunk']:4d}  {r['samples_per_s']:9.1f} samples/s  GPU {1e3*r['gpu_s']/r['calls']:8.2f} ms/call")
PY
