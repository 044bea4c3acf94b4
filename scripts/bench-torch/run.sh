#!/bin/sh
# Builds dpfilbench and times dpfil against its PyTorch peer in alternating rounds
# (bench.py), after checking that the peer computes dpfil's numbers (check.sh).
# Needs Debian's python3-torch (torch 1.13 with functorch): a benchmark dependency
# only. Usage: scripts/bench-torch/run.sh [bench.py flags, e.g. --rounds 5 --seconds 4]
set -eu
cd "$(dirname "$0")/../.."
go build -o bin/dpfilbench ./scripts/bench-torch/dpfilbench
export OPENBLAS_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE TORCH_THREADS=2
scripts/bench-torch/check.sh
exec /usr/bin/python3 scripts/bench-torch/bench.py --dpfilbench bin/dpfilbench "$@"
