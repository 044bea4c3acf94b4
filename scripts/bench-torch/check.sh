#!/bin/sh
# Checks that torch_peer.py computes dpfil's numbers on identical inputs: dpfilbench
# exports parameters, inputs, labels, FIL coordinates and the engine's outputs
# (per-sample clipped gradients, their sum, losses, FIL values) for mnist-cnn and
# cifar-cnn, and the peer compares its own (both jvp formulations) to float32
# tolerance. Exit status 1 on a mismatch.
set -eu
cd "$(dirname "$0")/../.."
[ -x bin/dpfilbench ] || go build -o bin/dpfilbench ./scripts/bench-torch/dpfilbench
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OPENBLAS_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE
bin/dpfilbench export -model mnist-cnn -batch 8 -coords 6 -seed 3 -out "$dir/mnist"
bin/dpfilbench export -model cifar-cnn -batch 3 -coords 4 -seed 3 -out "$dir/cifar"
/usr/bin/python3 scripts/bench-torch/torch_peer.py check "$dir/mnist" mnist-cnn
/usr/bin/python3 scripts/bench-torch/torch_peer.py check "$dir/cifar" cifar-cnn
