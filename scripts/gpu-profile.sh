#!/usr/bin/env bash
# Where the GPU time of a training step goes, per kernel: the question the first H100
# run left open (docs/perf.md, "Measured on an H100": the FIL step ran at 27 % of its
# predicted rate while the GPU was busy 93-99 % of every call). A second device call
# after scripts/gpu-check.sh, with the same carried pack (make gpu-pack):
#
#   scripts/gpu-profile.sh          # ≈ 1-2 min; writes $OUT/profile.tar.gz and $OUT/kernels.txt
#
# It runs `dpfil-cuda bench engine --device cuda` (warm: the captured CUDA graphs
# replayed) for mnist-cnn (B = 600, k = 50) and cifar-cnn (B = 200, k = 50) under
# Nsight Systems with every graph node traced (--cuda-graph-trace=node), and tables
# each kernel's and cuBLAS GEMM's total GPU time, calls and share (nsys stats,
# cuda_gpu_kern_sum). Without nsys it falls back to Nsight Compute's per-kernel
# duration (ncu, slower: each kernel replayed); with neither it exits 1 saying so.
# PROFILE_MODELS (default "mnist-cnn cifar-cnn") and PROFILE_SECONDS (default 1)
# narrow it.
set -u
cd "$(dirname "$0")/.."
root=$(pwd)
OUT=${OUT:-out/gpu-profile}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
W=$OUT/profile
rm -rf "$W" "$OUT/profile.tar.gz" "$OUT/kernels.txt"
mkdir -p "$W"
pack=bin/gpu-pack/gpu-pack.tar.gz
if [ -f "$pack" ] && { [ ! -x bin/dpfil-cuda ] || [ "$pack" -nt bin/dpfil-cuda ]; }; then
  tar -xzf "$pack" -C "$root" || { echo "gpu-profile: cannot unpack $pack" >&2; exit 1; }
fi
if [ ! -x bin/dpfil-cuda ]; then
  echo "gpu-profile: bin/dpfil-cuda missing: run 'make gpu-pack' on a machine with Go and carry bin/gpu-pack" >&2
  exit 1
fi
find_tool() { # NAME: on PATH or in the usual CUDA / Nsight install folders
  command -v "$1" 2>/dev/null && return 0
  ls /usr/local/cuda*/bin/"$1" /opt/nvidia/nsight-*/bin/"$1" /opt/nvidia/nsight-*/*/bin/"$1" \
    /usr/local/cuda*/nsight-*/bin/"$1" 2>/dev/null | head -n 1 | grep . && return 0
  return 1
}
nsys=$(find_tool nsys) || nsys=
ncu=$(find_tool ncu) || ncu=
RUN=$root/scripts/gpu-run.sh
SECS=${PROFILE_SECONDS:-1}
: >"$OUT/kernels.txt"
status=0
for model in ${PROFILE_MODELS:-mnist-cnn cifar-cnn}; do
  flags="--batch 600 --coords 50"
  [ "$model" = cifar-cnn ] && flags="--batch 200 --coords 50 --fil-batch 2"
  bench="bin/dpfil-cuda bench engine --device cuda --model $model $flags --seconds $SECS --warmup 2 --oracle=false --json"
  if [ -n "$nsys" ]; then
    echo "gpu-profile: $model under $nsys" >&2
    timeout 240 "$RUN" "$nsys" profile --force-overwrite true --trace cuda,cublas --cuda-graph-trace node \
      --sample none --cpuctxsw none -o "$W/$model" $bench >"$W/$model.bench.json" 2>"$W/$model.log" || {
      echo "gpu-profile: nsys profile failed for $model (see $model.log)" >&2; status=1; continue; }
    "$nsys" stats --force-export true --report cuda_gpu_kern_sum --format csv --output "$W/$model" \
      "$W/$model.nsys-rep" >>"$W/$model.log" 2>&1 || { echo "gpu-profile: nsys stats failed for $model" >&2; status=1; continue; }
    csv=$(ls "$W/$model"*cuda_gpu_kern_sum*.csv 2>/dev/null | head -n 1)
    tool=nsys
  elif [ -n "$ncu" ]; then
    echo "gpu-profile: $model under $ncu (no nsys)" >&2
    timeout 300 "$RUN" "$ncu" --graph-profiling node --metrics gpu__time_duration.sum --csv \
      --launch-skip 200 --launch-count 400 $bench >"$W/$model.ncu.csv" 2>"$W/$model.log" || {
      echo "gpu-profile: ncu failed for $model (see $model.log)" >&2; status=1; continue; }
    csv=$W/$model.ncu.csv
    tool=ncu
  else
    echo "gpu-profile: neither nsys nor ncu found (PATH, /usr/local/cuda*/bin, /opt/nvidia/nsight-*)" >&2
    exit 1
  fi
  python3 scripts/gpu-kernels.py "$csv" "$tool" "$model" >>"$OUT/kernels.txt" || status=1
done
tar -czf "$OUT/profile.tar.gz" -C "$OUT" profile && rm -rf "$W"
cat "$OUT/kernels.txt"
exit $status
