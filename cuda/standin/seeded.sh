#!/bin/sh
# Seeded GPU-only bugs: each is applied to a copy of the working tree, the dpfil_cuda
# test binary is built there and run against the stand-in driver (checks on), and
# the run must FAIL with the stand-in's (or the GPU driver's) message. With
# EMULATOR=1, `go test ./cuda` (the default build: the CPU emulator only, what CI ran
# before the stand-in) also runs on each, to show which bugs it passes. docs/perf.md ("Seeded bugs") has the
# table; `make cuda-standin-seeded` runs this. Slow: one build per bug.
#
#   cuda/standin/seeded.sh [BUG...]     (default: all; names below)
set -eu
cd "$(dirname "$0")/../.."
root=$(pwd)

all="missing-sync no-context race go-pointer int-as-64bit oob-store param-added host-touch ring-reuse"
bugs=${*:-$all}

# The headers and stub the Makefile finds (make cuda-env).
inc=""
for h in /usr/include/cuda.h /usr/local/cuda/include/cuda.h "${CUDA_HDR_DIR:-${HOME:-/root}/.cache/dpfil-cuda-headers}/usr/include/cuda.h"; do
  if [ -f "$h" ]; then inc=$(dirname "$h"); break; fi
done
stubs=""
for s in /usr/lib/x86_64-linux-gnu/stubs/libcuda.so /usr/local/cuda/lib64/stubs/libcuda.so "${CUDA_HDR_DIR:-${HOME:-/root}/.cache/dpfil-cuda-headers}/usr/lib/x86_64-linux-gnu/stubs/libcuda.so"; do
  if [ -f "$s" ]; then stubs=$(dirname "$s"); break; fi
done
if [ -z "$inc" ] || [ -z "$stubs" ]; then
  echo "seeded: cuda.h or the libcuda stub not found: . scripts/fetch-cuda-headers.sh" >&2
  exit 1
fi

# edit FILE PERL-EXPR: a perl -0 substitution that must change FILE.
edit() {
  cp "$1" "$1.orig"
  perl -0pi -e "$2" "$1"
  if cmp -s "$1" "$1.orig"; then
    echo "seeded: the edit of $1 matched nothing: update seeded.sh" >&2
    exit 1
  fi
  rm -f "$1.orig"
}

# ptx_resum records dpfil.cu's new SHA-256 in the PTX's first line, as make ptx would
# (the bugs below change kernel bodies, which the stand-in runs from the .cu source;
# only their PTX parameter lists matter to it).
ptx_resum() {
  sum=$(sha256sum cuda/kernels/dpfil.cu | cut -d' ' -f1)
  perl -pi -e "s/sha256 [0-9a-f]{64}/sha256 $sum/ if \$. == 1" cuda/kernels/dpfil.ptx
}

# Each bug: apply it (in the copy), the tests to run, what the output must say.
apply() {
  case $1 in
  missing-sync) # the blocked reduction reads its sums without waiting for the device
    edit cuda/backend.go 's/\tif err := b\.gd\.Sync\(\); err != nil \{\n\t\tb\.fail\(fmt\.Errorf\("cuda: synchronize: %w", err\)\)\n\t\treturn nil\n\t\}\n\treturn b\.fpart/\treturn b.fpart/'
    run='^TestKernelsAgainstCPU$' want='unexpected fault address' ;;
  no-context) # GPU methods lock the OS thread but no longer make the context current on it
    edit cuda/gpu.go 's/(\truntime\.LockOSThread\(\)\n\tif err := )cu\.SetCurrentContext\(g\.ctx\)(; err != nil \{\n\t\truntime\.UnlockOSThread\(\)\n\t\tg\.state\.RUnlock)/$1error(nil)$2/'
    run='^TestGPUConcurrentGoroutines$' want='no current context on this OS thread' ;;
  race) # col2im as a scatter: threads of different taps add into one input pixel
    edit cuda/kernels/dpfil.cu 's/(KERNEL k_col2im\([^)]*\) \{\n).*?\n\}\n/$1\tint hwo = outH * outW;\n\tGRID_STRIDE(i, (long long)rows * inC * kh * kw * hwo) {\n\t\tint pos = (int)(i % hwo);\n\t\tlong long q = i \/ hwo;\n\t\tint r = (int)(q % rows), row = (int)(q \/ rows);\n\t\tint c = row \/ (kh * kw), t = row % (kh * kw);\n\t\tint ih = (pos \/ outW) * stride - padT + t \/ kw, iw = (pos % outW) * stride - padL + t % kw;\n\t\tif (ih >= 0 && ih < h && iw >= 0 && iw < w)\n\t\t\tdx[(long long)r * inN + ((long long)c * h + ih) * w + iw] += cols[(long long)row * ld + (long long)r * hwo + pos];\n\t}\n}\n/s'
    ptx_resum
    run='^TestKernelsAgainstCPU$' want='race: kernel k_col2im' ;;
  go-pointer) # foreign (Go) slices go to kernels and GEMMs as they are, not staged
    edit cuda/backend.go 's/if b\.owns\(p, 4\*len\(s\)\) \{/if true || b.owns(p, 4*len(s)) {/'
    run='^TestKernelsAgainstCPU$' want='is not device memory' ;;
  int-as-64bit) # cuda.Arg passes an int as a sign-extended 64-bit value
    edit cuda/driver.go 's/case int:\n\t\treturn uint64\(uint32\(int32\(x\)\)\)/case int:\n\t\treturn uint64(x)/'
    run='^TestGPUDriver$' want='upper 4 are not 0' ;;
  oob-store) # k_act_fwd runs one element past n
    edit cuda/kernels/dpfil.cu 's/GRID_STRIDE\(i, n\) \{ y\[i\] = act_f\(f, x\[i\]\); \}/GRID_STRIDE(i, n + 1) { y[i] = act_f(f, x[i]); }/'
    ptx_resum
    run='^TestKernelsAgainstCPU$' want='bytes past the end of allocation' ;;
  param-added) # k_act_fwd gains a parameter (.cu, emulator, PTX as make ptx would), not the launch
    edit cuda/kernels/dpfil.cu 's/KERNEL k_act_fwd\(int f, int n, const float\* x, float\* y\)/KERNEL k_act_fwd(int f, int n, const float* x, float* y, int unused)/'
    edit cuda/emu_kernels.c 's/k_act_fwd\(I\(0\), I\(1\), PF\(2\), PF\(3\)\);/k_act_fwd(I(0), I(1), PF(2), PF(3), I(4));/'
    edit cuda/kernels/dpfil.ptx 's/(\t\.param \.u64 k_act_fwd_param_3)\n\)/$1,\n\t.param .u32 k_act_fwd_param_4\n)/'
    ptx_resum
    run='^TestGPUDriver$' want='takes 5 arguments, got 4' ;;
  host-touch) # the network loads its inputs with a host copy into plain device memory
    edit models/devicemem.go 's/\tif n\.dm != nil \{\n\t\tn\.dm\.Copy\(dst, src\)\n\t\treturn\n\t\}\n\tcopy\(dst, src\)/\tcopy(dst, src)/'
    run='^TestDeviceMemoryMatchesManaged$' want='unexpected fault address' ;;
  ring-reuse) # the upload ring reuses page-locked bytes that a queued copy still reads
    edit cuda/gpu_pinned.go 's/slot := unsafe\.Add\(g\.pin, g\.pinUsed\)/slot := g.pin/'
    run='^TestGPUUploadRing$' want='changed the' ;;
  *)
    echo "seeded: unknown bug $1 (known: $all)" >&2
    exit 2 ;;
  esac
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
for bug in $bugs; do
  tree=$work/$bug
  mkdir -p "$tree"
  git ls-files -z --cached --others --exclude-standard | (cd "$root" && xargs -0 cp --parents -t "$tree")
  log=$work/$bug.log
  (cd "$tree" && apply "$bug" && echo "$run" > .run && echo "$want" > .want)
  run=$(cat "$tree/.run") want=$(cat "$tree/.want")
  if ! (cd "$tree" && make -s cuda-standin >"$log" 2>&1 &&
    CGO_ENABLED=1 CGO_CFLAGS="-g -O2 -I$inc" CGO_LDFLAGS="-L$stubs" go test -c -tags dpfil_cuda -o bin/cuda.test ./cuda >>"$log" 2>&1); then
    echo "seeded $bug: the build failed (see below)"
    cat "$log"
    failed=1
    continue
  fi
  status=0
  (cd "$tree/cuda" && LD_LIBRARY_PATH="$tree/bin/standin" DPFIL_CUBLAS="$tree/bin/standin/libcublas.so.12" \
    DPFIL_STANDIN_QUIET=1 GOTRACEBACK=single ../bin/cuda.test -test.count=1 -test.run "$run" >"$log" 2>&1) || status=$?
  if [ "$status" != 0 ] && grep -q -F -- "$want" "$log"; then
    echo "seeded $bug: caught (exit status $status): $(grep -m 1 -F -- "$want" "$log" | cut -c 1-220)"
  else
    echo "seeded $bug: NOT CAUGHT (exit status $status, expected \"$want\"):"
    tail -n 20 "$log"
    failed=1
  fi
  if [ "${EMULATOR:-0}" = 1 ]; then
    # What CI ran before the stand-in: the cuda package's tests on the emulator.
    if (cd "$tree" && go test -count=1 ./cuda >"$log.emu" 2>&1); then
      echo "seeded $bug: go test ./cuda (emulator only) passes"
    else
      echo "seeded $bug: go test ./cuda (emulator only) fails too: $(grep -m 1 -E -- '--- FAIL|panic|fatal|error' "$log.emu" | cut -c 1-160)"
    fi
  fi
  rm -rf "$tree"
done
exit $failed
