#!/bin/sh
# Assembles the committed PTX with NVIDIA's ptxas, as the driver's JIT would on a GPU:
# for sm_75 (the PTX target, Turing) and sm_90 (Hopper), with
# --warn-on-spills --warn-on-local-memory-usage -Werror, and checks that every
# kernel's registers × the largest block the backend launches (cuda/backend.go) fit
# the 65 536 registers of a block. ptxas is the one from Debian non-free's
# nvidia-cuda-toolkit 11.8 (an 84 MB .deb): only usr/bin/ptxas is unpacked from it,
# into $PTXAS_DIR (default ~/.cache/dpfil-ptxas), nothing is installed. $PTXAS
# overrides; a ptxas on PATH is used too. Needs the contrib and non-free apt
# components, which scripts/fetch-cuda-headers.sh enables.
#
#   cuda/standin/ptxas-check.sh cuda/kernels/dpfil.ptx
set -eu
ptx=${1:-cuda/kernels/dpfil.ptx}
dir=${PTXAS_DIR:-${HOME:-/root}/.cache/dpfil-ptxas}
backend=$(dirname "$ptx")/../backend.go

ptxas=${PTXAS:-}
if [ -z "$ptxas" ] && [ -x "$dir/usr/bin/ptxas" ]; then ptxas=$dir/usr/bin/ptxas; fi
if [ -z "$ptxas" ] && command -v ptxas >/dev/null 2>&1; then ptxas=$(command -v ptxas); fi
if [ -z "$ptxas" ]; then
  if ! apt-cache show nvidia-cuda-toolkit >/dev/null 2>&1; then
    echo "ptxas-check: apt does not know nvidia-cuda-toolkit: enable contrib non-free (. scripts/fetch-cuda-headers.sh does)" >&2
    exit 1
  fi
  tmp=$(mktemp -d)
  chmod 755 "$tmp" # apt downloads as the _apt user
  echo "ptxas-check: downloading nvidia-cuda-toolkit (84 MB; only usr/bin/ptxas is kept)" >&2
  mkdir -p "$dir"
  if ! (cd "$tmp" && apt-get download -qq nvidia-cuda-toolkit >&2 &&
    dpkg-deb --fsys-tarfile nvidia-cuda-toolkit_*.deb | tar -x -C "$dir" ./usr/bin/ptxas); then
    rm -rf "$tmp"
    echo "ptxas-check: could not unpack ptxas from nvidia-cuda-toolkit" >&2
    exit 1
  fi
  rm -rf "$tmp"
  ptxas=$dir/usr/bin/ptxas
fi
echo "ptxas-check: $("$ptxas" --version | tail -n 1)"

# The largest block the backend launches: its blockSize and reduceBlock constants.
block=$(sed -n 's/^[[:space:]]*\(blockSize\|reduceBlock\)[[:space:]]*=[[:space:]]*\([0-9][0-9]*\).*/\2/p' "$backend" | sort -n | tail -n 1)
if [ -z "$block" ]; then
  echo "ptxas-check: cannot read blockSize/reduceBlock from $backend" >&2
  exit 1
fi

status=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for arch in sm_75 sm_90; do
  if ! "$ptxas" -arch="$arch" --warn-on-spills --warn-on-local-memory-usage -Werror -v -o /dev/null "$ptx" >"$log" 2>&1; then
    echo "ptxas-check: ptxas -arch=$arch failed:" >&2
    cat "$log" >&2
    status=1
    continue
  fi
  # "Compiling entry function 'k_x' for 'sm_75'" ... "Used N registers, ..."
  if ! awk -v arch="$arch" -v block="$block" '
    /Compiling entry function/ { split($0, q, "'\''"); name = q[2] }
    /Used [0-9]+ registers/ {
      for (i = 1; i <= NF; i++) if ($i == "Used") regs = $(i + 1)
      n++
      if (regs * block > 65536) { printf "ptxas-check: %s on %s: %d registers x %d threads > 65536\n", name, arch, regs, block; bad = 1 }
      if (regs > max) { max = regs; maxname = name }
    }
    END {
      if (n == 0) { print "ptxas-check: no kernels in the ptxas output"; exit 1 }
      printf "ptxas-check: %s: %d kernels, no spills, no local memory; most registers: %s %d (x %d threads = %d <= 65536)\n", arch, n, maxname, max, block, max * block
      exit bad
    }' "$log"; then
    status=1
  fi
done
exit $status
