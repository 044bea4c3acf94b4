#!/bin/sh
# The CUDA evidence run, on a GPU host (no Go there: build first, here, with
# `make cuda`, then carry bin/ with the working tree). It runs, through gpu-run.sh:
#   1. the cuda test binary: kernels, conformance suite and the 20-step DP-SGD run,
#      each on the emulator and on the GPU, against the CPU / float64 reference;
#   2. `bench engine --device cuda` for mnist-cnn (batch 600, k = 50) and cifar-cnn
#      (batch 200, k = 50): GPU vs CPU in one run, % of the FP32 floor;
#   3. a 20-step mnist-cnn DP-SGD run with FIL on cpu and on cuda (same seed);
#   4. which of the cuBLAS entry points dpfil loads (cuda/cublas.go) the host's
#      libcublas exports, with their symbol versions;
# writes everything under $OUT (default out/gpu-check) and prints a table last.
# Usage: scripts/gpu-check.sh [SECONDS_PER_BENCH]   (default 20)
set -eu
cd "$(dirname "$0")/.."
OUT=${OUT:-out/gpu-check}
SECS=${1:-20}
RUN=scripts/gpu-run.sh
mkdir -p "$OUT"
for b in bin/dpfil-cuda bin/cuda.test; do
  [ -x "$b" ] || { echo "gpu-check: $b missing: run 'make cuda' on a machine with Go and carry bin/" >&2; exit 1; }
done

echo "== 1. cuda tests (emulator and GPU)"
status=0
(cd cuda && ../$RUN ../bin/cuda.test -test.v -test.count=1 -test.timeout 20m) > "$OUT/cuda-test.log" 2>&1 || status=$?
grep -E '^(--- |ok|FAIL|PASS)' "$OUT/cuda-test.log" | tail -30
echo "cuda.test exit status: $status"

echo "== 2. bench engine --device cuda"
$RUN bin/dpfil-cuda bench engine --device cuda --model mnist-cnn --batch 600 --coords 50 \
  --seconds "$SECS" --oracle=false --json > "$OUT/bench-mnist-cnn.json" 2> "$OUT/bench-mnist-cnn.log" || echo "bench mnist-cnn failed: see $OUT/bench-mnist-cnn.log"
$RUN bin/dpfil-cuda bench engine --device cuda --model cifar-cnn --batch 200 --coords 50 \
  --seconds "$SECS" --oracle=false --json > "$OUT/bench-cifar-cnn.json" 2> "$OUT/bench-cifar-cnn.log" || echo "bench cifar-cnn failed: see $OUT/bench-cifar-cnn.log"

echo "== 3. 20-step DP-SGD run, cpu vs cuda"
for dev in cpu cuda; do
  rm -rf "$OUT/train-$dev"
  $RUN bin/dpfil-cuda train --device "$dev" --model mnist-cnn --steps 20 --batch 600 --fil-coords 50 \
    --seed 7 --quiet --out "$OUT/train-$dev" --json > "$OUT/train-$dev.json" 2> "$OUT/train-$dev.log" || echo "train $dev failed: see $OUT/train-$dev.log"
done

echo "== 4. cuBLAS symbols"
# The library gpu-run.sh finds (DPFIL_CUBLAS, or the soname search on its path).
lib=$($RUN true 2>&1 | sed -n 's/^gpu-run: cuBLAS: \([^ ]*\).*/\1/p' | head -n 1)
: > "$OUT/cublas-symbols.txt"
if [ -z "$lib" ] || [ ! -e "$lib" ]; then
  echo "no libcublas found (see gpu-run's warning)" | tee "$OUT/cublas-symbols.txt"
else
  echo "library: $(readlink -f "$lib")" >> "$OUT/cublas-symbols.txt"
  for sym in cublasCreate_v2 cublasDestroy_v2 cublasSetStream_v2 cublasSetMathMode cublasGetVersion_v2 \
             cublasSgemm_v2 cublasSgemmStridedBatched; do
    if command -v nm >/dev/null 2>&1; then
      found=$(nm -D --defined-only "$lib" 2>/dev/null | awk -v s="$sym" '{split($3, n, "@"); if (n[1] == s) {print $3; exit}}')
    else # no binutils on the host: ask the dynamic linker
      found=$($RUN python3 -c 'import ctypes, sys
l = ctypes.CDLL(sys.argv[1])
print(sys.argv[2] if hasattr(l, sys.argv[2]) else "")' "$lib" "$sym" 2>/dev/null || true)
    fi
    echo "$sym ${found:-MISSING}" >> "$OUT/cublas-symbols.txt"
  done
  if command -v nm >/dev/null 2>&1; then
    echo "exported cublas* symbols: $(nm -D --defined-only "$lib" 2>/dev/null | awk '$3 ~ /^cublas/' | wc -l)" >> "$OUT/cublas-symbols.txt"
  fi
  cat "$OUT/cublas-symbols.txt"
fi

python3 - "$OUT" "$status" <<'PY'
import json, os, sys
out, status = sys.argv[1], sys.argv[2]
def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except Exception as e:
        return {"error": str(e)}
print("\n| check | result |\n|---|---|")
print(f"| cuda.test (emulator + GPU) | exit status {status} |")
for m in ("mnist-cnn", "cifar-cnn"):
    r = load(f"bench-{m}.json"); d = r.get("device") or {}
    if not d:
        print(f"| bench {m} | failed: {r.get('error', 'no device result')} |"); continue
    print(f"| bench {m} grad | {d['per_sample_grad']['samples_per_s']:.0f} samples/s = {d['grad_speedup_vs_cpu']:.2f}x CPU ({r['per_sample_grad']['samples_per_s']:.0f}), {d['pct_of_floor_grad']:.3f}% of FP32 floor |")
    print(f"| bench {m} FIL k=50 | {d['fil_step']['samples_per_s']:.1f} samples/s = {d['fil_speedup_vs_cpu']:.2f}x CPU ({r['fil_step']['samples_per_s']:.1f}), {d['pct_of_floor_fil']:.3f}% of FP32 floor ({d['name']}, peak {d['peak_gflop_per_s']:.0f} GFLOP/s) |")
    for what in ("grad_counts", "fil_counts"):
        c = d.get(what)
        if c:
            print(f"| bench {m} {what} per call | {c['htod_bytes']:.0f} bytes in, {c['dtoh_bytes']:.0f} out, {c['syncs']:.1f} syncs, {c['launches']:.0f} launches, {c['gemms']:.0f} GEMMs (resident inputs: {d.get('resident')}) |")
c, g = load("train-cpu.json"), load("train-cuda.json")
if "error" in c or "error" in g:
    print(f"| train 20 steps | failed: {c.get('error') or g.get('error')} |")
else:
    for k in ("test_accuracy", "dfil_max", "dfil_median", "epsilon"):
        a, b = c.get(k), g.get(k)
        rel = abs(a - b) / abs(a) if a else abs(b)
        print(f"| train 20 steps {k} | cpu {a:.6g}, cuda {b:.6g}, rel. diff {rel:.2e} |")
    print(f"| train 20 steps samples/s (steps only) | cpu {c.get('samples_per_sec', 0):.0f}, cuda {g.get('samples_per_sec', 0):.0f} |")
    d = g.get("device") or {}
    ps = d.get("per_step") or {}
    print(f"| train cuda device | resident {d.get('resident')} {d.get('not_resident', '')}; {d.get('upload_bytes', 0)} bytes uploaded once; per step "
          f"{ps.get('htod_bytes', 0):.0f} bytes in ({d.get('batch_index_bytes', 0):.0f} of indices), {ps.get('dtoh_bytes', 0):.0f} out, "
          f"{ps.get('syncs', 0):.1f} syncs, {ps.get('launches', 0):.0f} launches, {ps.get('gemms', 0):.0f} GEMMs |")
try:
    with open(os.path.join(out, "cublas-symbols.txt")) as f:
        lines = [l.strip() for l in f if l.strip()]
    syms = [l.split() for l in lines if l.startswith("cublas") and not l.startswith("cublas* ")]
    missing = [s[0] for s in syms if s[1] == "MISSING"]
    lib = next((l[len("library: "):] for l in lines if l.startswith("library: ")), "not found")
    print(f"| cuBLAS symbols ({lib}) | {len(syms) - len(missing)}/{len(syms)} found: {', '.join(s[1] for s in syms if s[1] != 'MISSING')}"
          + (f"; MISSING: {', '.join(missing)}" if missing else "") + " |")
except Exception as e:
    print(f"| cuBLAS symbols | {e} |")
PY
