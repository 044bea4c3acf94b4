#!/bin/sh
# Packs what scripts/gpu-check.sh needs on a GPU host, which has no Go: the
# dpfil_cuda CLI and cuda test binary, cmpruns and dpfilbench, built here with
# -trimpath -ldflags='-s -w' and gzipped into bin/gpu-pack/gpu-pack.tar.gz (bin/ is
# ignored by git, so it travels only when named in the device call's carry). Checks
# that the working tree that travels (tracked and untracked-not-ignored files) plus
# the pack stay under the device call's 64 MiB, and prints the call to make.
# Run by `make gpu-pack` (which sets GO and the cgo environment of `make cuda`).
set -eu
cd "$(dirname "$0")/.."
GO=${GO:-go}
dir=bin/gpu-pack
rm -rf "$dir"
mkdir -p "$dir/stage/bin"
flags="-trimpath"
ld="-s -w"
echo "gpu-pack: building stripped binaries"
$GO build $flags -ldflags="$ld" -tags dpfil_cuda -o "$dir/stage/bin/dpfil-cuda" ./cmd/dpfil
$GO test -c $flags -ldflags="$ld" -tags dpfil_cuda -o "$dir/stage/bin/cuda.test" ./cuda
$GO build $flags -ldflags="$ld" -o "$dir/stage/bin/cmpruns" cuda/standin/cmpruns.go
$GO build $flags -ldflags="$ld" -o "$dir/stage/bin/dpfilbench" ./scripts/bench-torch/dpfilbench
# BASE=REV also packs REV's dpfil-cuda as bin/dpfil-cuda-base (and REV's full hash in
# bin/dpfil-cuda-base.rev), for scripts/gpu-ab.sh: the previous version and this one
# timed alternately on the same GPU in one call.
if [ -n "${BASE:-}" ]; then
  rev=$(git rev-parse --verify "$BASE^{commit}") || { echo "gpu-pack: BASE=$BASE is not a commit" >&2; exit 1; }
  wt=$(mktemp -d)/base
  git worktree add --detach -q "$wt" "$rev"
  echo "gpu-pack: building the baseline dpfil-cuda at $rev"
  if ! (cd "$wt" && $GO build $flags -ldflags="$ld" -tags dpfil_cuda -o "$OLDPWD/$dir/stage/bin/dpfil-cuda-base" ./cmd/dpfil); then
    git worktree remove --force "$wt"
    echo "gpu-pack: the baseline at $rev does not build" >&2
    exit 1
  fi
  git worktree remove --force "$wt"
  echo "$rev" >"$dir/stage/bin/dpfil-cuda-base.rev"
fi
tar -czf "$dir/gpu-pack.tar.gz" -C "$dir/stage" bin
rm -rf "$dir/stage"

pack=$(stat -c %s "$dir/gpu-pack.tar.gz")
tree=$(git ls-files -z -co --exclude-standard | du -cb --files0-from=- 2>/dev/null | tail -n 1 | cut -f1)
shared=0
if [ -d shared ]; then shared=$(du -sb shared | cut -f1); fi
total=$((pack + tree + shared))
limit=$((64 * 1024 * 1024))
awk -v p="$pack" -v t="$tree" -v s="$shared" 'BEGIN { m = 1048576
  printf "gpu-pack: pack %.1f MiB + working tree %.1f MiB + shared/ %.1f MiB = %.1f MiB (limit 64 MiB)\n", p / m, t / m, s / m, (p + t + s) / m }'
if [ "$total" -ge "$limit" ]; then
  echo "gpu-pack: over the device call's 64 MiB: ignore or carry less" >&2
  exit 1
fi
cat <<MSG
gpu-pack: the device call (one call, at most 6 minutes of it; from the checkout that holds this commit):
  carry:     ["$dir"]
  command:   scripts/gpu-check.sh
  timeout_s: 420
It writes \$OUT/gpu-check.tar.gz, \$OUT/summary.txt and \$OUT/summary.json and exits 1 when a check fails.
Then, on the same warm machine (same carry), if the session's device time allows:
  command:   scripts/gpu-profile.sh      (timeout_s 300: per-kernel GPU time, \$OUT/kernels.txt)
  command:   scripts/gpu-peer-tune.sh    (timeout_s 300: the torch.func peer's best gradient and FIL variants)
  command:   scripts/gpu-ab.sh           (timeout_s 300, needs BASE=REV at make gpu-pack: REV vs this commit, alternating)
and call give_back when done.
MSG
