#!/usr/bin/env bash
# Checks scripts/results.sh --work on a one-entry document outside the repository:
# the first run keeps the entry's work folder with its binary and commit; a rerun
# continues in that folder with the saved binary (a finished `train --continue` run
# is returned, not trained again) and --update stamps the commit saved with it, not
# HEAD. Needs a clean tree (as --update does), jq and go. Exit 0 = all held.
set -euo pipefail
cd "$(dirname "$0")/.."
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cat >"$T/doc.md" <<'DOC'
# results.sh --work check
```results
id: work-check
tier: long
commit: 000000000000
date: 2026-01-01
status: current
run: $DPFIL train --model linear --steps 20 --batch 50 --train-subset 300 --fil-coords 0 --seed 5 --json --quiet --continue --out $W/r > $W/r.json
expect: r.json .test_accuracy 4 0
```
DOC
fail() { echo "results-work-check: FAIL: $*" >&2; exit 1; }
# 1. First run (a check: the recorded 0 differs, so it fails), the work kept.
if scripts/results.sh --doc "$T/doc.md" --only work-check --work "$T/work" >"$T/log1" 2>&1; then
  fail "the check of a recorded 0 passed"; fi
W=$T/work/work-check
[ -x "$W/.dpfil" ] && [ -s "$W/.commit" ] && [ -s "$W/r/result.json" ] || fail "work folder incomplete: $(ls -A "$W")"
sum=$(sha256sum "$W/r/result.json")
# 2. As if a binary of another commit had started it: the rerun must use the saved
#    binary and stamp the saved commit.
echo 0123456789ab >"$W/.commit"
scripts/results.sh --doc "$T/doc.md" --only work-check --work "$T/work" --update >"$T/log2" 2>&1 || { cat "$T/log2"; fail "rerun failed"; }
grep -q "continuing work-check in $W with the binary of 0123456789ab" "$T/log2" || { cat "$T/log2"; fail "the rerun did not continue in the work folder"; }
grep -qx "commit: 0123456789ab" "$T/doc.md" || fail "stamped $(grep '^commit:' "$T/doc.md"), want the saved commit"
[ "$(sha256sum "$W/r/result.json")" = "$sum" ] || fail "the finished run was trained again"
want=$(jq -r '.test_accuracy' "$W/r.json" | xargs printf '%.4g')
grep -qx "expect: r.json .test_accuracy 4 $want" "$T/doc.md" || fail "expect not updated to $want: $(grep '^expect' "$T/doc.md")"
echo "results-work-check: ok (work folder reused, saved binary and commit $(cat "$W/.commit") stamped, accuracy $want)"
