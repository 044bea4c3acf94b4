#!/usr/bin/env bash
# Tunes the PyTorch peer on the GPU before a dpfil ÷ torch ratio is claimed
# (docs/perf.md): the clipped-gradient variants first (vmap over the whole batch or
# in chunks, Opacus-style hooks, mixed ghost clipping), then the FIL step's jvp
# formulations (fwd: jvp through the clipped gradient; rev: vjp of the jvp) × sample
# chunks; B = 600 mnist-cnn and B = 200 cifar-cnn, k = 50, TF32 off. One JSON line per
# configuration in $OUT/peer-tune.jsonl (one that runs out of memory or time is logged
# and skipped), and the best variant per model and path on stderr. On a GPU host (a
# device call; needs no Go; ≈ 3 min at the default SECS):
#
#   scripts/gpu-peer-tune.sh            # SECS (default 2) per configuration
#   scripts/gpu-peer-tune.sh --dry-run  # here: PyTorch on the CPU, B = 8 and 2, k = 2
#
# The best variants feed scripts/gpu-check.sh (GRAD_VARIANT; CHUNK_MNIST/CHUNK_CIFAR).
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-out/gpu-peer-tune}
mkdir -p "$OUT"
f=$OUT/peer-tune.jsonl
: >"$f"
: >"$OUT/peer-tune.log"
if [ "${1:-}" = "--dry-run" ]; then
  dev=cpu SECS=0.1 py=
  for p in python3 /usr/bin/python3; do
    if "$p" -c 'import torch' >/dev/null 2>&1; then py=$p; break; fi
  done
  [ -n "$py" ] || { echo "gpu-peer-tune: --dry-run needs PyTorch (python3 or /usr/bin/python3)" >&2; exit 1; }
  specs=("mnist-cnn 8 2 vmap:0,vmap:4,hooks,mixed fwd:4,fwd:8,rev:8" "cifar-cnn 2 2 vmap:0,vmap:1,hooks,mixed fwd:1,fwd:2,rev:2")
else
  dev=cuda SECS=${SECS:-2} py=python3
  specs=("mnist-cnn 600 50 vmap:0,vmap:100,hooks,mixed fwd:200,fwd:600,rev:600"
    "cifar-cnn 200 50 vmap:0,vmap:50,hooks,mixed fwd:25,fwd:100,rev:100")
fi
fails=0
for spec in "${specs[@]}"; do
  set -- $spec
  model=$1 b=$2 k=$3
  for pv in "grad:$4" "fil:$5"; do
    path=${pv%%:*}
    IFS=, read -r -a variants <<<"${pv#*:}"
    for v in "${variants[@]}"; do
      kk=$k
      [ "$path" = grad ] && kk=0
      echo "peer-tune: $model $path $v" >&2
      if ! TORCH_DEVICE=$dev timeout 60 "$py" scripts/bench-torch/torch_peer.py time "$model" "$path" "$b" "$kk" "$SECS" "$v" \
        >>"$f" 2>>"$OUT/peer-tune.log"; then
        echo "peer-tune: $model $path $v failed (see peer-tune.log)" >&2
        fails=$((fails + 1))
      fi
    done
  done
done
"$py" - "$f" <<'PY'
import json, sys
best = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    gpu = r.get("gpu_s")
    ms = f"GPU {1e3 * gpu / r['calls']:8.2f} ms/call" if gpu else f"wall {1e3 * r['wall_s'] / r['calls']:8.2f} ms/call"
    print(f"{r['model']:10s} {r['path']:4s} {r['variant']:9s} {r['samples_per_s']:10.1f} samples/s  {ms}", file=sys.stderr)
    key = (r["model"], r["path"])
    if key not in best or r["samples_per_s"] > best[key]["samples_per_s"]:
        best[key] = r
for (m, p), r in sorted(best.items()):
    print(f"peer-tune: best {m} {p}: {r['variant']} ({r['samples_per_s']:.1f} samples/s)", file=sys.stderr)
PY
echo "peer-tune: $fails configuration(s) failed" >&2
[ -s "$f" ]
