#!/usr/bin/env bash
# What `make test` needs besides Go, installed when possible, explained when not:
#   gcc + libc6-dev        cgo (the cuda package's CPU emulator); without a C compiler
#                          Go turns cgo off and the cuda package does not build.
#   dataset-fashion-mnist  real Fashion-MNIST (Debian main), read by the loader tests
#                          in /usr/share/datasets/fashion-mnist.
# One line does it by hand:  sudo apt-get install -y gcc libc6-dev dataset-fashion-mnist
set -euo pipefail

missing=()
command -v gcc >/dev/null 2>&1 || missing+=(gcc libc6-dev)
[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] || missing+=(dataset-fashion-mnist)
[ ${#missing[@]} -eq 0 ] && exit 0

echo "make test needs the Debian packages: ${missing[*]}" >&2
if [ "$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo"; else SUDO=none; fi
if [ "$SUDO" = none ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "cannot install them here (no root, passwordless sudo or apt-get). Run:" >&2
  echo "  sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "installing them with apt-get (as $( [ -z "$SUDO" ] && echo root || echo sudo ))" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
echo "installed: ${missing[*]}" >&2
