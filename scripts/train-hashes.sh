#!/usr/bin/env bash
# train-hashes.sh BINARY WORKDIR: short `dpfil train` runs of the five built-in models
# with FIL on (same seeds), then one SHA-256 line per output: result.json without the
# fields that name the build or time the run (dpfil, git_commit, samples_per_sec,
# step_seconds, wall_seconds; WORKDIR replaces the work folder in paths), dfil.npy,
# params.npy, params.npz and the transcripts.
# Run it with the binary built before and after a refactor that must keep CPU results
# bit-identical, and diff the two outputs:
#
#   go build -o /tmp/dpfil.before ./cmd/dpfil      # at the base commit
#   go build -o /tmp/dpfil.after ./cmd/dpfil       # after
#   scripts/train-hashes.sh /tmp/dpfil.before /tmp/h.before > /tmp/before.txt
#   scripts/train-hashes.sh /tmp/dpfil.after /tmp/h.after > /tmp/after.txt
#   diff /tmp/before.txt /tmp/after.txt && echo bit-identical
#
# cifar-cnn runs on CIFAR-10 binary batch files generated here (deterministic bytes,
# the format's exact layout: 10 000 records of a label byte + 3072 pixel bytes per
# file). Each model also exercises a different option: mnist-cnn 2 repeats,
# mnist-cnn-3x3 hard clipping with shuffled batches, mlp the exact FIL trace, linear
# uniform sampling with label FIL, cifar-cnn FIL w.r.t. normalised inputs. Needs jq and
# python3.
set -euo pipefail
bin=$(realpath "$1")
work=$2
rm -rf "$work"
mkdir -p "$work/cifar/cifar-10-batches-bin"

python3 - "$work/cifar/cifar-10-batches-bin" <<'EOF'
import hashlib, os, sys
d = sys.argv[1]
names = [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]
records = 10000  # the loader wants full batch files
for k, name in enumerate(names):
    pix = hashlib.shake_256(f"dpfil-cifar-fixture/{k}".encode()).digest(records * 3072)
    out = bytearray()
    for r in range(records):
        out.append((r + k) % 10)
        out += pix[r * 3072:(r + 1) * 3072]
    with open(os.path.join(d, name), "wb") as f:
        f.write(out)
EOF

common=(--seed 7 --steps 4 --batch 16 --lr 0.05 --quiet --json --record-transcript)
run() {
  local name=$1
  shift
  "$bin" train "${common[@]}" --out "$work/$name" "$@" >"$work/$name.stdout"
}
run mnist-cnn --model mnist-cnn --train-subset 200 --fil-coords 5 --repeats 2
run mnist-cnn-3x3 --model mnist-cnn-3x3 --train-subset 200 --fil-coords 5 --clip-mode hard --sampling shuffle
run mlp --model mlp --train-subset 100 --fil-exact
run linear --model linear --train-subset 300 --fil-coords 6 --sampling uniform --fil-label
run cifar-cnn --model cifar-cnn --dataset cifar10 --data-dir "$work/cifar" --train-subset 200 --fil-coords 4 --fil-normalized-inputs

for name in mnist-cnn mnist-cnn-3x3 mlp linear cifar-cnn; do
  dir=$work/$name
  h=$(jq -S 'del(.dpfil, .git_commit, .samples_per_sec, .step_seconds, .wall_seconds)' "$dir/result.json" |
    sed "s|$work|WORKDIR|g" | sha256sum | cut -c1-64)
  echo "$name result.json(filtered) $h"
  for f in "$dir"/dfil.npy "$dir"/params*.np[yz] "$dir"/transcript*.bin; do
    [ -f "$f" ] || continue
    echo "$name $(basename "$f") $(sha256sum "$f" | cut -c1-64)"
  done
done
