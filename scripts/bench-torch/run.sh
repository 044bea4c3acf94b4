#!/bin/sh
# Builds dpfilbench and times dpfil against the best of its PyTorch peer's variants
# (bench.py), after checking that the peer computes dpfil's numbers (check.sh).
# Needs Debian's python3-torch (torch 1.13 with functorch): a benchmark dependency
# only. Usage: scripts/bench-torch/run.sh [bench.py flags, e.g. --rounds 3 --seconds 3]
set -eu
cd "$(dirname "$0")/../.."
go build -o bin/dpfilbench ./scripts/bench-torch/dpfilbench
export OPENBLAS_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE TORCH_THREADS=2
scripts/bench-torch/check.sh
exec /usr/bin/python3 scripts/bench-torch/bench.py --dpfilbench bin/dpfilbench "$@"
