#!/usr/bin/env bash
# The previous version against this one on the same GPU, in one device call: the
# baseline dpfil-cuda (packed by `make gpu-pack BASE=REV` as bin/dpfil-cuda-base)
# and this commit's, each running `bench engine --device cuda`, alternately
# (base, new, base, new, …: ROUNDS pairs, default 2) for mnist-cnn (B = 600, k = 50) and
# cifar-cnn (B = 200, k = 50). Reported per model and path: each run's device
# samples/s and GPU (event) ms per call, and new ÷ base of the medians. The CPU
# engine is timed in the same runs too (bench engine's rounds), which also shows
# whether the host stayed steady. With the same carry as scripts/gpu-check.sh:
#
#   scripts/gpu-ab.sh             # ≈ 4 min (SECS=2, ROUNDS=2); $OUT/ab.txt, $OUT/ab.json, $OUT/ab-runs.tar.gz
#   scripts/gpu-ab.sh --dry-run   # here, on the stand-in (make cuda cuda-standin), tiny batches:
#                                 # bin/dpfil-cuda against itself (run by make gpu-check-dry)
set -u
cd "$(dirname "$0")/.."
root=$(pwd)
dry=0
if [ "${1:-}" = "--dry-run" ]; then dry=1; shift; fi
[ "$#" -eq 0 ] || { echo "usage: $0 [--dry-run]" >&2; exit 2; }
OUT=${OUT:-out/gpu-ab}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
# The runs are kept outside OUT (only the 3 summary files land there: at most 8 files
# come back from a device call) and tarred after each model.
W=$(mktemp -d)/ab-runs
rm -f "$OUT/ab.txt" "$OUT/ab.json" "$OUT/ab-runs.tar.gz"
mkdir -p "$W"
pack=bin/gpu-pack/gpu-pack.tar.gz
if [ -f "$pack" ] && { [ ! -x bin/dpfil-cuda ] || [ "$pack" -nt bin/dpfil-cuda ]; }; then
  tar -xzf "$pack" -C "$root" || { echo "gpu-ab: cannot unpack $pack" >&2; exit 1; }
fi
# The dry run times bin/dpfil-cuda against itself: the stand-in runs this tree's
# kernels (compiled as C), which another revision's PTX need not match.
base=bin/dpfil-cuda-base
if [ "$dry" = 1 ]; then
  base=bin/dpfil-cuda
elif [ ! -x "$base" ]; then
  echo "gpu-ab: $base missing: pack it with 'make gpu-pack BASE=REV' and carry bin/gpu-pack" >&2
  exit 1
fi
[ -x bin/dpfil-cuda ] || { echo "gpu-ab: bin/dpfil-cuda missing (make gpu-pack)" >&2; exit 1; }
rev=$(cat bin/dpfil-cuda-base.rev 2>/dev/null || echo unknown)
[ "$dry" = 1 ] && rev="bin/dpfil-cuda (dry run: itself)"
ROUNDS=${ROUNDS:-2}
if [ "$dry" = 1 ]; then
  SECS=0.2 WARM=1 specs=("mnist-cnn --batch 8 --coords 2" "cifar-cnn --batch 2 --coords 2")
  export DPFIL_STANDIN_QUIET=1 DPFIL_STANDIN_CHECKS=0
else
  SECS=${SECS:-2} WARM=2 specs=("mnist-cnn --batch 600 --coords 50" "cifar-cnn --batch 200 --coords 50")
fi
# summarise [final]: ab.txt and ab.json from the runs so far, and the runs' tarball
# (a call cut short still returns what it measured: at most 8 files come back).
summarise() {
  python3 - "$W" "$OUT" "$rev" "$1" <<'PY'
import glob, json, os, statistics, sys
w, out, rev, final = sys.argv[1:5]
rows, lines = [], [f"# gpu-ab: baseline {rev} vs this build\n",
                   "| model | path | base samples/s (runs) | new samples/s (runs) | new ÷ base | GPU ms/call base → new |",
                   "|---|---|---|---|---|---|"]
device, missing = None, False
for model in ("mnist-cnn", "cifar-cnn"):
    for path, timing in (("per_sample_grad", "grad_timing"), ("fil_step", "fil_timing")):
        got = {}
        for which in ("base", "new"):
            rates, gpu = [], []
            for f in sorted(glob.glob(os.path.join(w, f"{model}-{which}-*.json"))):
                try:
                    d = json.load(open(f)).get("device") or {}
                except ValueError:
                    continue
                device = device or d.get("name")
                r = (d.get(path) or {}).get("samples_per_s")
                if r:
                    rates.append(r)
                t = d.get(timing) or {}
                if t.get("calls") and t.get("device_s") is not None:
                    gpu.append(1e3 * t["device_s"])  # mean per timed call
            got[which] = (rates, gpu)
        (br, bg), (nr, ng) = got["base"], got["new"]
        if not br or not nr:
            if final == "final":
                print(f"gpu-ab: no {path} rate for {model} (base {len(br)}, new {len(nr)} runs)", file=sys.stderr)
                missing = True
            continue
        ratio = statistics.median(nr) / statistics.median(br)
        rows.append({"model": model, "path": path, "base": br, "new": nr, "ratio_new_over_base": ratio,
                     "gpu_ms_per_call_base": bg, "gpu_ms_per_call_new": ng})
        fmt = lambda v: ", ".join(f"{x:.0f}" for x in v)
        gms = (f"{statistics.median(bg):.3f} → {statistics.median(ng):.3f}" if bg and ng else "—")
        lines.append(f"| {model} | {path} | {fmt(br)} | {fmt(nr)} | {ratio:.2f}× | {gms} |")
lines.append(f"\ndevice: {device}")
text = "\n".join(lines) + "\n"
open(os.path.join(out, "ab.txt"), "w").write(text)
json.dump({"baseline": rev, "device": device, "rows": rows}, open(os.path.join(out, "ab.json"), "w"), indent=1)
print(text, file=sys.stderr if final != "final" else sys.stdout)
sys.exit(1 if missing else 0)
PY
  local rc=$?
  tar -czf "$OUT/ab-runs.tar.gz" -C "$(dirname "$W")" ab-runs
  return $rc
}
status=0
for spec in "${specs[@]}"; do
  model=${spec%% *}
  for ((i = 1; i <= ROUNDS; i++)); do
    for which in base new; do
      bin=bin/dpfil-cuda
      [ "$which" = base ] && bin=$base
      f=$W/$model-$which-$i.json
      echo "gpu-ab: $model $which round $i" >&2
      if ! timeout 150 scripts/gpu-run.sh "$bin" bench engine --device cuda --model $spec --seconds "$SECS" \
        --warmup "$WARM" --oracle=false --json >"$f" 2>"$W/$model-$which-$i.log"; then
        echo "gpu-ab: $model $which round $i failed (see ab-runs/$model-$which-$i.log)" >&2
        status=1
      fi
    done
  done
  summarise partial || status=1
done
summarise final || status=1
rm -rf "$(dirname "$W")"
exit $status
