#!/usr/bin/env bash
# The CUDA evidence run: ONE device call of at most 6 minutes on a fresh GPU host
# (H100/H200: CUDA 13 driver, compute-sanitizer, PyTorch; no Go, no internet), with
# the binaries built here and carried. Build and pack them first:
#
#   make gpu-pack            # prints the exact `carry` list and the command
#
# On the GPU host (the device call's command):
#
#   scripts/gpu-check.sh     # writes $OUT/gpu-check.tar.gz, $OUT/summary.txt, $OUT/summary.json
#
# Without a GPU, the same script end to end against the stand-in driver
# (make gpu-check-dry, which also checks that a seeded failure exits non-zero):
#
#   scripts/gpu-check.sh --dry-run
#
# Checks, each PASS, FAIL or SKIP in the summary; the exit status is 1 when any
# FAILs. SKIP exists only in --dry-run, for what only a GPU host has (nvidia-smi,
# compute-sanitizer, PyTorch with CUDA); on a GPU host their absence FAILs.
#   nvidia-smi       the device, driver and CUDA version
#   cuda.test        the cuda test binary: kernels, conformance, the DP-SGD run, each
#                    on the emulator and on the GPU (--dry-run: a subset, $GPU_CHECK_TEST_RUN)
#   sanitizer-*      compute-sanitizer memcheck, racecheck and synccheck on a 2-step
#                    training run with FIL (a tool the runtime refuses is SKIP, said why)
#   train-20         20 DP-SGD steps with FIL, --device cpu and --device cuda, same seed,
#                    compared by cmpruns: test accuracy within $ACC_TOL (absolute),
#                    every sample's dFIL, the final parameters and every step's released
#                    noisy sum within $RTOL (relative; a different noise draw differs by
#                    ≈ 1.4): GPU 0.002 and 1e-3, stand-in 0 and 1e-4 (as CI)
#   torch-check      the PyTorch peer (scripts/bench-torch/torch_peer.py) on the GPU
#                    computes dpfil's numbers (dpfilbench export: losses, clipped
#                    gradients and their sum, FIL values) to float32 tolerance
#                    (--dry-run: where PyTorch is installed without CUDA, the peer is
#                    timed on the CPU at the dry run's tiny batches, so that the timing
#                    calls' arguments are exercised; those ratios mean nothing)
#   bench-*          dpfil bench engine --device cuda (warm: --warmup calls left out;
#                    host issue, host wait and GPU event time apart) between two runs of
#                    the torch.func peer on the same GPU (TF32 off), for mnist-cnn
#                    (B = 600, k = 50) and cifar-cnn (B = 200, k = 50): the ratios
#                    dpfil ÷ torch in samples/s are printed; the run must succeed and
#                    report a device rate and a timing split (speed is reported, not a
#                    pass/fail criterion)
#
# Environment: OUT (default out/gpu-check), GPU_CHECK_SECONDS (per measurement,
# default 6; dry run 0.2), GPU_CHECK_TEST_RUN (cuda.test -test.run),
# GPU_CHECK_STEPS (a comma list of nvidia-smi, cuda.test, sanitizer, train, torch,
# bench: the steps to run; default all), and GPU_CHECK_SEED_FAIL=train (a seeded
# failure: the accuracy tolerance becomes negative, so train-20 must FAIL and the
# script exit 1).
set -u
cd "$(dirname "$0")/.."
root=$(pwd)

dry=0
if [ "${1:-}" = "--dry-run" ]; then
  dry=1
  shift
fi
if [ "$#" -ne 0 ]; then
  echo "usage: $0 [--dry-run]" >&2
  exit 2
fi

OUT=${OUT:-out/gpu-check}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
W=$OUT/gpu-check # everything goes into the tarball; only the summaries beside it
rm -rf "$W" "$OUT/gpu-check.tar.gz" "$OUT/summary.txt" "$OUT/summary.json"
mkdir -p "$W"
T0=$SECONDS
RUN=$root/scripts/gpu-run.sh
results=$W/results.tsv # name, status, detail
: >"$results"

log() { echo "gpu-check [$((SECONDS - T0)) s] $*" | tee -a "$W/progress.log" >&2; }
record() { # NAME STATUS DETAIL
  printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$results"
  log "$1: $2 $3"
}
# absent NAME WHAT: SKIP in the dry run, FAIL on a GPU host.
absent() {
  if [ "$dry" = 1 ]; then record "$1" SKIP "$2 (dry run)"; else record "$1" FAIL "$2"; fi
}
# want STEP: whether GPU_CHECK_STEPS (default: all) names STEP.
want() { case ",${GPU_CHECK_STEPS:-all}," in *",all,"* | *",$1,"*) return 0 ;; esac; return 1; }
# An NVIDIA GPU and driver (nvidia-smi lists one): nvidia-smi and compute-sanitizer
# need them; the dry run has only the stand-in.
gpu=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then gpu=1; fi

# ---- the carried pack: bin/gpu-pack/gpu-pack.tar.gz (make gpu-pack) ----
# Unpacked when the binaries are missing (the GPU host) or older than the pack.
pack=bin/gpu-pack/gpu-pack.tar.gz
if [ -f "$pack" ] && { [ ! -x bin/dpfil-cuda ] || [ "$pack" -nt bin/dpfil-cuda ]; }; then
  tar -xzf "$pack" -C "$root" || record unpack FAIL "cannot unpack $pack"
fi
for b in bin/dpfil-cuda bin/cuda.test bin/cmpruns bin/dpfilbench; do
  if [ ! -x "$b" ]; then
    record binaries FAIL "$b missing: run 'make gpu-pack' on a machine with Go and carry bin/gpu-pack"
  fi
done

if [ "$dry" = 1 ]; then
  SECS=${GPU_CHECK_SECONDS:-0.2}
  TEST_RUN=${GPU_CHECK_TEST_RUN:-^(TestGPUReopen|TestGPUContextRetainedOnce|TestEvents|TestTimeDevice|TestSumTree|TestPTXHasNoContractedFMA)$}
  # The stand-in runs kernels on one CPU thread: 3 small steps keep the dry run
  # cheap (make cuda-standin-check compares the 20-step run in CI).
  TRAIN="--model mnist-cnn --steps 3 --batch 16 --fil-coords 2 --seed 7 --quiet"
  SAN_TRAIN="--model mnist-cnn --steps 2 --batch 8 --fil-coords 2 --seed 7 --quiet"
  RTOL=1e-4 ACC_TOL=0
  BENCH_MNIST="--batch 16 --coords 2" BENCH_CIFAR="--batch 2 --coords 2" BENCH_WARMUP=1
  CHUNK_MNIST=16 CHUNK_CIFAR=2 GRAD_VARIANT=vmap:0 PEER_MNIST="16 2" PEER_CIFAR="2 2"
  # The stand-in's memcheck and race check are CI's (make cuda-standin-check); off here.
  export DPFIL_STANDIN_QUIET=1 DPFIL_STANDIN_CHECKS=0
else
  SECS=${GPU_CHECK_SECONDS:-6}
  TEST_RUN=${GPU_CHECK_TEST_RUN:-.}
  TRAIN="--model mnist-cnn --steps 20 --batch 600 --fil-coords 50 --seed 7 --quiet"
  SAN_TRAIN="--model mnist-cnn --steps 2 --batch 32 --fil-coords 4 --seed 7 --quiet"
  RTOL=1e-3 ACC_TOL=0.002
  BENCH_MNIST="--batch 600 --coords 50" BENCH_CIFAR="--batch 200 --coords 50" BENCH_WARMUP=2
  # The peer's best variants on an H100 and an H200 (scripts/gpu-peer-tune.sh,
  # docs/perf.md): FIL forward-over-reverse in chunks of 600 (mnist-cnn, the whole
  # batch) and 100 (cifar-cnn) samples, all k directions of a sample at once, inside
  # 78 GiB; gradients one vmap over the batch (torch_peer.py's variant names).
  CHUNK_MNIST=600 CHUNK_CIFAR=100 GRAD_VARIANT=${GRAD_VARIANT:-vmap:0} PEER_MNIST="600 50" PEER_CIFAR="200 50"
fi
if [ "${GPU_CHECK_SEED_FAIL:-}" = "train" ]; then
  ACC_TOL=-1
  log "seeded failure: accuracy tolerance $ACC_TOL"
fi
# Each step's own limit, and never past the call's budget ($GPU_CHECK_BUDGET seconds
# from the start, default 340: the device call allows 6 minutes); a step cut by the
# budget fails like any other.
BUDGET=${GPU_CHECK_BUDGET:-340}
lim() { # SECONDS COMMAND...
  local n=$1 left=$((BUDGET - (SECONDS - T0)))
  shift
  [ "$left" -lt "$n" ] && n=$left
  [ "$n" -lt 1 ] && n=1
  timeout --kill-after=5 "$n" "$@"
}

# ---- nvidia-smi ----
if ! want nvidia-smi; then
  :
elif [ "$gpu" = 0 ]; then
  absent nvidia-smi "no NVIDIA GPU: nvidia-smi $(command -v nvidia-smi >/dev/null 2>&1 && echo lists none || echo not found)"
elif command -v nvidia-smi >/dev/null 2>&1; then
  if nvidia-smi >"$W/nvidia-smi.txt" 2>&1; then
    record nvidia-smi PASS "$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -n 1)"
  else
    record nvidia-smi FAIL "exit status $? (see nvidia-smi.txt)"
  fi
else
  absent nvidia-smi "nvidia-smi not found"
fi

# ---- phase A, in parallel: cuda.test | CPU training run | sanitizers, GPU run, torch check ----
log "phase A: cuda.test, the CPU run and the sanitizer/GPU/torch sequence in parallel"
pid_test='' pid_cpu=''
if want cuda.test; then
  (
    cd cuda && lim 200 "$RUN" ../bin/cuda.test -test.v -test.count=1 -test.timeout 190s -test.run "$TEST_RUN"
  ) >"$W/cuda-test.log" 2>&1 &
  pid_test=$!
fi
if want train; then
  (lim 200 "$RUN" bin/dpfil-cuda train --device cpu $TRAIN --record-transcript --out "$W/train-cpu" --json \
    >"$W/train-cpu.json" 2>"$W/train-cpu.log"; echo $? >"$W/train-cpu.rc") &
  pid_cpu=$!
fi

san=$(command -v compute-sanitizer 2>/dev/null || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1)
for tool in ${GPU_CHECK_SAN_TOOLS:-memcheck racecheck synccheck}; do
  name=sanitizer-$tool
  # racecheck instruments every shared-memory access: the 2-step run and its
  # evaluation took 75 s under it on an H100, past the 60 s the others need.
  san_lim=60
  [ "$tool" = racecheck ] && san_lim=${GPU_CHECK_RACECHECK_SECONDS:-200}
  if ! want sanitizer; then
    continue
  elif [ "$gpu" = 0 ]; then
    absent "$name" "no NVIDIA GPU for compute-sanitizer"
    continue
  elif [ -z "$san" ]; then
    absent "$name" "compute-sanitizer not found"
    continue
  fi
  # Go's asynchronous preemption signals are left out of the sanitized process.
  GODEBUG=asyncpreemptoff=1 lim "$san_lim" "$RUN" "$san" --tool "$tool" --error-exitcode 3 bin/dpfil-cuda train --device cuda $SAN_TRAIN \
    --out "$W/san-$tool" >"$W/$name.log" 2>&1
  rc=$?
  # memcheck and synccheck end with "ERROR SUMMARY: n errors", racecheck with
  # "RACECHECK SUMMARY: n hazards displayed (e errors, w warnings)".
  errs=$(grep -Eo '(ERROR SUMMARY: [0-9]+ error|RACECHECK SUMMARY: [0-9]+ hazards displayed \([0-9]+ errors, [0-9]+ warnings\))' "$W/$name.log" | tail -n 1)
  if [ "$rc" = 0 ]; then
    record "$name" PASS "${errs:-no error summary}"
  elif grep -qiE 'not supported|unsupported|is not available' "$W/$name.log"; then
    record "$name" SKIP "the runtime does not support $tool: $(grep -iE 'not supported|unsupported|is not available' "$W/$name.log" | head -n 1)"
  else
    record "$name" FAIL "exit status $rc, ${errs:-see $name.log}"
  fi
done

rc_cuda=0
if want train; then
  lim 120 "$RUN" bin/dpfil-cuda train --device cuda $TRAIN --record-transcript --out "$W/train-cuda" --json \
    >"$W/train-cuda.json" 2>"$W/train-cuda.log"
  rc_cuda=$?
fi

if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
  have_torch=1
else
  have_torch=0
fi
# The dry run times the peer on the CPU where PyTorch is installed without CUDA, so the
# timing calls' arguments (variant names, chunks) are exercised before a GPU host runs
# them (a wrong variant name once cost a GPU session its gradient ratios).
TORCH_TIME_DEVICE=cuda TORCH_PY=python3 have_torch_time=$have_torch
if [ "$dry" = 1 ] && [ "$have_torch" = 0 ]; then
  for py in python3 /usr/bin/python3; do
    if "$py" -c 'import torch' >/dev/null 2>&1; then
      have_torch_time=1 TORCH_TIME_DEVICE=cpu TORCH_PY=$py
      break
    fi
  done
fi
if ! want torch; then
  :
elif [ "$have_torch" = 1 ]; then
  ok=1
  : >"$W/torch-check.log"
  for spec in "mnist-cnn 8 6" "cifar-cnn 3 4"; do
    set -- $spec
    bin/dpfilbench export -model "$1" -batch "$2" -coords "$3" -seed 3 -out "$W/export-$1" >>"$W/torch-check.log" 2>&1 &&
      TORCH_DEVICE=cuda lim 90 python3 scripts/bench-torch/torch_peer.py check "$W/export-$1" "$1" >>"$W/torch-check.log" 2>&1 || ok=0
  done
  if [ "$ok" = 1 ]; then
    record torch-check PASS "$(grep -c ' ok$' "$W/torch-check.log") outputs within float32 tolerance of dpfil's"
  else
    record torch-check FAIL "$(grep -m1 MISMATCH "$W/torch-check.log" || tail -n 1 "$W/torch-check.log")"
  fi
else
  absent torch-check "PyTorch with CUDA not available"
fi

if [ -n "$pid_test" ]; then
  wait "$pid_test"
  rc_test=$?
  pass=$(grep -c '^--- PASS' "$W/cuda-test.log")
  fails=$(grep '^--- FAIL' "$W/cuda-test.log" | head -n 5 | tr '\n' ' ')
  if [ "$rc_test" = 0 ]; then
    record cuda.test PASS "$pass top-level tests passed (-test.run $TEST_RUN)"
  else
    record cuda.test FAIL "exit status $rc_test; ${fails:-see cuda-test.log}"
  fi
fi

if [ -n "$pid_cpu" ]; then wait "$pid_cpu"; fi
rc_cpu=$(cat "$W/train-cpu.rc" 2>/dev/null || echo 1)
if ! want train; then
  :
elif [ "$rc_cpu" != 0 ] || [ "$rc_cuda" != 0 ]; then
  record train-20 FAIL "train exit status: cpu $rc_cpu, cuda $rc_cuda (see train-*.log)"
elif bin/cmpruns -rtol "$RTOL" -acc-tol "$ACC_TOL" -transcripts "$W/train-cpu" "$W/train-cuda" >"$W/cmpruns.log" 2>&1; then
  record train-20 PASS "$(head -n 1 "$W/cmpruns.log" | sed 's/^cmpruns: //')"
else
  record train-20 FAIL "$(tail -n 1 "$W/cmpruns.log" | sed 's/^cmpruns: //')"
fi

# ---- phase B, alone on the GPU: dpfil between two torch.func runs per model ----
log "phase B: benchmarks (dpfil bench engine between torch.func runs)"
torch_time() { # MODEL PATH BATCH K VARIANT OUTFILE (VARIANT as torch_peer.py names it)
  TORCH_DEVICE=$TORCH_TIME_DEVICE TORCH_WARMUP=$BENCH_WARMUP lim 120 "$TORCH_PY" scripts/bench-torch/torch_peer.py \
    time "$1" "$2" "$3" "$4" "$SECS" "$5" >>"$6" 2>>"$W/torch-time.log"
}
for spec in "mnist-cnn $PEER_MNIST $CHUNK_MNIST" "cifar-cnn $PEER_CIFAR $CHUNK_CIFAR"; do
  want bench || break
  set -- $spec
  model=$1 tb=$2 tk=$3 chunk=$4
  flags=$BENCH_MNIST
  [ "$model" = cifar-cnn ] && flags=$BENCH_CIFAR
  : >"$W/torch-$model.jsonl"
  if [ "$have_torch_time" = 1 ]; then
    torch_time "$model" grad "$tb" 0 "$GRAD_VARIANT" "$W/torch-$model.jsonl"
    torch_time "$model" fil "$tb" "$tk" "fwd:$chunk" "$W/torch-$model.jsonl"
  fi
  lim 150 "$RUN" bin/dpfil-cuda bench engine --device cuda --model "$model" $flags --seconds "$SECS" \
    --warmup "$BENCH_WARMUP" --oracle=false --json >"$W/bench-$model.json" 2>"$W/bench-$model.log"
  rc=$?
  if [ "$have_torch_time" = 1 ]; then
    torch_time "$model" grad "$tb" 0 "$GRAD_VARIANT" "$W/torch-$model.jsonl"
    torch_time "$model" fil "$tb" "$tk" "fwd:$chunk" "$W/torch-$model.jsonl"
  fi
  if [ "$rc" != 0 ]; then
    record "bench-$model" FAIL "exit status $rc: $(tail -n 1 "$W/bench-$model.log")"
  elif python3 - "$W/bench-$model.json" <<'PY'; then
import json, sys
d = json.load(open(sys.argv[1])).get("device") or {}
ok = d.get("fil_step", {}).get("samples_per_s", 0) > 0 and d.get("per_sample_grad", {}).get("samples_per_s", 0) > 0
ok = ok and (d.get("grad_timing") or {}).get("calls", 0) > 0 and (d.get("fil_timing") or {}).get("calls", 0) > 0
sys.exit(0 if ok else 1)
PY
    record "bench-$model" PASS "device rates and timing split reported"
  else
    record "bench-$model" FAIL "no device rate or timing split in bench-$model.json"
  fi
  if [ "$have_torch_time" = 0 ]; then
    absent "torch-time-$model" "PyTorch with CUDA not available"
  elif [ "$(wc -l <"$W/torch-$model.jsonl")" -lt 4 ]; then
    record "torch-time-$model" FAIL "the torch.func peer did not time every path (see torch-time.log)"
  else
    record "torch-time-$model" PASS "grad and FIL timed before and after dpfil"
  fi
done
log "total $((SECONDS - T0)) s"

# ---- summary: summary.txt (a table, the ratios), summary.json; the tarball ----
python3 - "$W" "$OUT" "$dry" "$((SECONDS - T0))" "$RTOL" "$ACC_TOL" <<'PY'
import json, os, sys
w, out, dry, secs, rtol, acc_tol = sys.argv[1], sys.argv[2], sys.argv[3] == "1", int(sys.argv[4]), sys.argv[5], sys.argv[6]
rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(w, "results.tsv")) if l.strip()]
def load(name):
    try:
        return json.load(open(os.path.join(w, name)))
    except Exception:
        return None
def loadl(name):
    try:
        return [json.loads(l) for l in open(os.path.join(w, name)) if l.strip()]
    except Exception:
        return []
lines = [f"# gpu-check{' (DRY RUN against the stand-in driver: no speed claim)' if dry else ''}: {secs} s", "",
         "| check | result | detail |", "|---|---|---|"]
lines += [f"| {n} | {s} | {d.replace('|', '¦')} |" for n, s, d in rows]
perf = {}
lines += ["", f"Thresholds: train-20 test accuracy within {acc_tol} (absolute), dFIL, parameters and released noisy sums within {rtol} (relative).", ""]
lines += ["| model | path | dpfil samples/s | wall per call | host issue | host wait | GPU (events) | torch.func samples/s (before, after) | torch GPU per call | dpfil ÷ torch |",
          "|---|---|---|---|---|---|---|---|---|---|"]
for model in ("mnist-cnn", "cifar-cnn"):
    b = load(f"bench-{model}.json") or {}
    d = b.get("device") or {}
    t = loadl(f"torch-{model}.jsonl")
    for path, key, tkey in (("grad", "per_sample_grad", "grad_timing"), ("fil", "fil_step", "fil_timing")):
        rate = (d.get(key) or {}).get("samples_per_s")
        tm = d.get(tkey) or {}
        tr = [r for r in t if r.get("path") == path]
        trates = [r["samples_per_s"] for r in tr]
        tgpu = [r.get("gpu_s", 0) / r["calls"] for r in tr if r.get("calls")]
        ratio = rate / (sum(trates) / len(trates)) if rate and trates else None
        perf[f"{model}/{path}"] = {"dpfil_samples_per_s": rate, "timing": tm, "torch_samples_per_s": trates,
                                   "torch_gpu_s_per_call": tgpu, "ratio_dpfil_over_torch": ratio,
                                   "batch": b.get("batch"), "coords": b.get("coords") if path == "fil" else 0,
                                   "device": d.get("name"), "cpu_engine_samples_per_s": (b.get(key) or {}).get("samples_per_s")}
        ms = lambda x: f"{1e3 * x:.3f} ms" if isinstance(x, (int, float)) else "—"
        lines.append(f"| {model} | {path} | {rate:.1f} |" if rate else f"| {model} | {path} | — |")
        lines[-1] += (f" {ms(tm.get('wall_s'))} | {ms(tm.get('host_issue_s'))} | {ms(tm.get('host_wait_s'))} | {ms(tm.get('device_s'))} |"
                      f" {', '.join(f'{x:.1f}' for x in trates) or '—'} | {', '.join(ms(x) for x in tgpu) or '—'} |"
                      f" {f'{ratio:.2f}×' if ratio else '—'} |")
failed = [n for n, s, _ in rows if s == "FAIL"]
lines += ["", f"device: {next((p['device'] for p in perf.values() if p.get('device')), 'unknown')}",
          f"result: {'FAIL: ' + ', '.join(failed) if failed else 'PASS'} ({sum(s == 'SKIP' for _, s, _ in rows)} skipped)"]
text = "\n".join(lines) + "\n"
open(os.path.join(out, "summary.txt"), "w").write(text)
json.dump({"dry_run": dry, "seconds": secs, "checks": [{"name": n, "status": s, "detail": d} for n, s, d in rows],
           "thresholds": {"train_acc_abs": float(acc_tol), "train_rel": float(rtol)}, "perf": perf,
           "failed": failed}, open(os.path.join(out, "summary.json"), "w"), indent=1)
print(text)
PY
nfail=$(awk -F'\t' '$2 == "FAIL"' "$results" | wc -l)
tar -czf "$OUT/gpu-check.tar.gz" -C "$OUT" gpu-check && rm -rf "$W"
if [ "$nfail" != 0 ] || ! [ -s "$OUT/summary.json" ] || ! [ -s "$OUT/gpu-check.tar.gz" ]; then
  echo "gpu-check: FAILED (see $OUT/summary.txt)" >&2
  exit 1
fi
echo "gpu-check: all checks passed ($OUT/summary.txt, $OUT/gpu-check.tar.gz)" >&2
exit 0
