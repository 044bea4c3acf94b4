#!/bin/sh
# The CUDA headers and the libcuda link stub, just enough to COMPILE dpfil's GPU build
# (make cuda, make cuda-check) on a machine without the CUDA toolkit: cuda.h and
# friends from Debian non-free's nvidia-cuda-dev (CUDA 11.8), unpacked from the .deb
# into a cache folder, nothing installed. Needs apt (Debian 12); enables the
# `contrib non-free` components when they are missing (root or sudo), ~1 min, 16 MB kept.
#
# Source it, or eval its output:
#   . scripts/fetch-cuda-headers.sh
#   eval "$(scripts/fetch-cuda-headers.sh)"
# Either way it sets CUDA_HDR_DIR (which the Makefile reads), CGO_CFLAGS and CGO_LDFLAGS.
# CUDA_HDR_DIR chooses the cache folder (default ~/.cache/dpfil-cuda-headers).

dpfil_fetch_cuda_headers() {
  _dir=${CUDA_HDR_DIR:-${HOME:-/root}/.cache/dpfil-cuda-headers}
  if [ ! -f "$_dir/usr/include/cuda.h" ] || [ ! -f "$_dir/usr/lib/x86_64-linux-gnu/stubs/libcuda.so" ]; then
    if [ "$(id -u)" = 0 ]; then _sudo=""; else _sudo="sudo"; fi
    _changed=""
    # Debian 12's deb822 sources: add contrib and non-free to each Components line.
    _src=/etc/apt/sources.list.d/debian.sources
    if [ -f "$_src" ] && grep -q '^Components:' "$_src"; then
      for _c in contrib non-free; do
        if grep '^Components:' "$_src" | grep -vq "[[:space:]]$_c\([[:space:]]\|$\)"; then
          $_sudo sed -i "/^Components:/{/[[:space:]]$_c\([[:space:]]\|\$\)/!s/\$/ $_c/}" "$_src" || return 1
          _changed=1
        fi
      done
    elif [ -f /etc/apt/sources.list ] && grep -q '^deb .* main' /etc/apt/sources.list &&
      ! grep -q '^deb .* non-free\([[:space:]]\|$\)' /etc/apt/sources.list; then
      $_sudo sed -i '/^deb .* main/{/non-free\([[:space:]]\|$\)/!s/$/ contrib non-free/}' /etc/apt/sources.list || return 1
      _changed=1
    fi
    if [ -n "$_changed" ] || ! apt-cache show nvidia-cuda-dev >/dev/null 2>&1; then
      echo "fetch-cuda-headers: apt-get update (contrib non-free)" >&2
      $_sudo apt-get update -qq >&2 || return 1
    fi
    mkdir -p "$_dir" || return 1
    _tmp=$(mktemp -d) || return 1
    chmod 755 "$_tmp" # apt downloads as the _apt user
    echo "fetch-cuda-headers: downloading nvidia-cuda-dev (a large .deb; only headers and stubs are kept)" >&2
    if ! (cd "$_tmp" && apt-get download -qq nvidia-cuda-dev >&2 &&
      dpkg-deb --fsys-tarfile nvidia-cuda-dev_*.deb |
      tar -x -C "$_dir" --wildcards './usr/include/*' './usr/lib/x86_64-linux-gnu/stubs/*'); then
      rm -rf "$_tmp"
      echo "fetch-cuda-headers: could not fetch nvidia-cuda-dev" >&2
      return 1
    fi
    rm -rf "$_tmp"
    if [ ! -f "$_dir/usr/include/cuda.h" ]; then
      echo "fetch-cuda-headers: cuda.h missing from the unpacked nvidia-cuda-dev" >&2
      return 1
    fi
  fi
  CUDA_HDR_DIR=$_dir
  # Go's default -g -O2 is kept: setting CGO_CFLAGS replaces it.
  CGO_CFLAGS="-g -O2 -I$_dir/usr/include"
  CGO_LDFLAGS="-L$_dir/usr/lib/x86_64-linux-gnu/stubs"
  export CUDA_HDR_DIR CGO_CFLAGS CGO_LDFLAGS
  echo "export CUDA_HDR_DIR='$CUDA_HDR_DIR'"
  echo "export CGO_CFLAGS='$CGO_CFLAGS'"
  echo "export CGO_LDFLAGS='$CGO_LDFLAGS'"
}

dpfil_fetch_cuda_headers
