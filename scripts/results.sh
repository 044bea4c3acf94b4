#!/usr/bin/env bash
# Regenerates and checks the recorded results of docs/results.md.
#
# Every recorded result in docs/results.md carries a fenced ```results block:
#
#   id: NAME                 unique name
#   tier: quick | long       quick entries run in CI (make results-check)
#   commit: HASH             the commit whose binary produced the numbers
#   date: YYYY-MM-DD
#   status: current | stale: <why>; regenerate with <command>   (long entries)
#   run: COMMAND             one or more; bash, with $DPFIL the binary, $W a fresh
#                            work folder and the repository root as the directory
#   expect: FILE JQ SIG VALUE   $W/FILE's jq value JQ printed with SIG significant
#                            digits (0: as jq -r prints it) must equal VALUE
#
# Usage: scripts/results.sh [--tier quick|all] [--only ID] [--update] [--doc FILE]
#                           [--work DIR]
#   (default: check the quick tier). A check fails (exit 1) when a number recorded in
#   the document is not what the current code produces. --update reruns the entries
#   and rewrites their expected values, commit and date; it refuses a dirty tree
#   (other than the document and docs/img), so that the stamped commit produced them.
#   Entries whose status is stale are skipped by checks and listed.
#   --work DIR keeps each entry's work folder as DIR/ID, with the dpfil binary that
#   started it and its commit, so that an interrupted long entry can be rerun by the
#   same command (in a later session too): its run: lines use 'train --continue',
#   which continues a checkpointed run and returns a finished one, every run uses
#   the saved binary, and the stamp names the commit that built it. Remove DIR/ID
#   to start the entry afresh.
set -euo pipefail
cd "$(dirname "$0")/.."
tier=quick only="" update=0 doc=docs/results.md work=""
while [ $# -gt 0 ]; do
  case "$1" in
    --tier) tier=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --update) update=1; shift ;;
    --doc) doc=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
    *) echo "results.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$tier" in quick|all) ;; *) echo "results.sh: --tier $tier: want quick or all" >&2; exit 2 ;; esac
command -v jq >/dev/null || { echo "results.sh: needs jq (apt-get install jq)" >&2; exit 2; }
[ -f "$doc" ] || { echo "results.sh: no $doc" >&2; exit 2; }

commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
dirty=$(git status --porcelain --untracked-files=no | grep -v -e " $doc\$" -e ' docs/img/' || true)
if [ "$update" = 1 ]; then
  if [ -n "$dirty" ]; then
    echo "results.sh --update: the tree has uncommitted changes; commit them first so that the stamped commit ($commit) is what produced the results:" >&2
    echo "$dirty" >&2; exit 2
  fi
fi
bin=$(mktemp -d)/dpfil
trap 'rm -rf "$(dirname "$bin")"' EXIT
echo "results.sh: building dpfil at $commit"
go build -o "$bin" ./cmd/dpfil
export DPFIL="$bin"

# The blocks as records: id<TAB>tier<TAB>status, then run/expect lines.
parse() {
  awk '
    /^```results[ \t]*$/ { inb = 1; next }
    inb && /^```/ { inb = 0; print "END"; next }
    inb {
      if ($0 ~ /^id: /) print "ID\t" substr($0, 5)
      else if ($0 ~ /^tier: /) print "TIER\t" substr($0, 7)
      else if ($0 ~ /^status: /) print "STATUS\t" substr($0, 9)
      else if ($0 ~ /^run: /) print "RUN\t" substr($0, 6)
      else if ($0 ~ /^expect: /) print "EXPECT\t" substr($0, 9)
    }' "$doc"
}

fail=0 runfail=0 ran=0 stale=() updates=$(mktemp)
run_entry() { # id, tier, status, runs (newline-separated), expects (newline-separated)
  local id=$1 t=$2 status=$3 runs=$4 expects=$5
  [ -n "$only" ] && [ "$id" != "$only" ] && return 0
  [ -z "$only" ] && [ "$tier" = quick ] && [ "$t" != quick ] && return 0
  if [[ "$status" == stale* ]] && [ "$update" = 0 ]; then stale+=("$id: $status"); return 0; fi
  if [ -z "${runs//$'\n'/}" ]; then stale+=("$id: no run: lines recorded (regenerate it by hand): $status"); return 0; fi
  local W at=$commit
  echo "== $id ($t) $(date -u +%T)"
  if [ -n "$work" ]; then # a kept work folder: its own binary and commit
    W=$work/$id
    mkdir -p "$W"
    if [ -x "$W/.dpfil" ] && [ -s "$W/.commit" ]; then
      at=$(cat "$W/.commit")
      echo "   continuing $id in $W with the binary of $at"
      if [ "$update" = 1 ] && [[ "$at" == *-dirty ]]; then # built by a check on a changed tree
        echo "   FAILED: $W's binary was built from uncommitted changes ($at): no commit produced it; remove $W and rerun"
        fail=1 runfail=1; return 0
      fi
    else
      at=$commit
      [ -z "$dirty" ] || at=$commit-dirty
      cp "$bin" "$W/.dpfil" && echo "$at" >"$W/.commit"
    fi
    DPFIL=$W/.dpfil
  else
    W=$(mktemp -d)
    DPFIL=$bin
  fi
  export W DPFIL
  local start=$SECONDS
  while IFS= read -r cmd; do
    [ -z "$cmd" ] && continue
    echo "   \$ $cmd"
    if ! bash -euo pipefail -c "$cmd" >"$W/.log" 2>&1; then
      echo "   FAILED to run; last lines:"; tail -5 "$W/.log" | sed 's/^/     /'; fail=1 runfail=1; [ -n "$work" ] || rm -rf "$W"; return 0
    fi
  done <<<"$runs"
  local ok=1
  while IFS= read -r e; do
    [ -z "$e" ] && continue
    local file expr sig want got
    read -r file expr sig want <<<"$e"
    got=$(jq -c -r "$expr" "$W/$file" 2>/dev/null || echo "<jq error>")
    if [ "$sig" != 0 ] && [[ "$got" =~ ^-?[0-9.eE+-]+$ ]]; then got=$(printf "%.${sig}g" "$got"); fi
    if [ "$got" = "$want" ]; then
      echo "   ok   $file $expr = $want"
    else
      echo "   DIFF $file $expr: docs record $want, the code at $at gives $got"
      ok=0
      printf '%s\t%s %s %s %s\t%s %s %s %s\n' "$id" "$file" "$expr" "$sig" "$want" "$file" "$expr" "$sig" "$got" >>"$updates"
    fi
  done <<<"$expects"
  printf '%s\tSTAMP\t%s\n' "$id" "$at" >>"$updates"
  echo "   ($((SECONDS - start)) s)"
  [ "$ok" = 1 ] || fail=1
  ran=$((ran + 1))
  if [ -n "$work" ]; then echo "   work kept in $W (remove it once the stamp is committed)"; else rm -rf "$W"; fi
}

id="" t="" status="" runs="" expects=""
while IFS=$'\t' read -r kind val; do
  case "$kind" in
    ID) id=$val ;; TIER) t=$val ;; STATUS) status=$val ;;
    RUN) runs+="$val"$'\n' ;; EXPECT) expects+="$val"$'\n' ;;
    END) run_entry "$id" "$t" "$status" "$runs" "$expects"; id="" t="" status="" runs="" expects="" ;;
  esac
done < <(parse)

for s in "${stale[@]+"${stale[@]}"}"; do echo "stale (not checked): $s"; done
if [ -n "$only" ] && ! grep -qx "id: $only" "$doc"; then
  echo "results.sh: no entry $only in $doc" >&2; exit 2
fi
if [ "$update" = 1 ]; then
  today=$(date -u +%F)
  awk -v upd="$updates" -v commit="$commit" -v today="$today" '
    BEGIN { FS = "\t"; while ((getline l < upd) > 0) { split(l, f, "\t"); if (f[2] == "STAMP") stamp[f[1]] = f[3]; else repl[f[1] "\t" f[2]] = f[3] } FS = " " }
    /^```results[ \t]*$/ { inb = 1; id = ""; print; next }
    inb && /^```/ { inb = 0; print; next }
    inb && /^id: / { id = substr($0, 5) }
    inb && /^commit: / && (id in stamp) { print "commit: " stamp[id]; next }
    inb && /^date: / && (id in stamp) { print "date: " today; next }
    inb && /^status: / && (id in stamp) { print "status: current"; next }
    inb && /^expect: / { k = id "\t" substr($0, 9); if (k in repl) { print "expect: " repl[k]; next } }
    { print }' "$doc" >"$doc.tmp" && mv "$doc.tmp" "$doc"
  echo "results.sh: $ran entries rerun (commit $commit, or the one named above for a continued work folder); $doc updated (review the diff, then commit it)"
  if [ "$runfail" = 1 ]; then
    echo "results.sh: some entries failed to run (FAILED above); their blocks are unchanged" >&2; exit 1
  fi
  exit 0
fi
if [ "$fail" = 1 ]; then
  echo "results.sh: FAIL: a number recorded in $doc is not what the code at $commit produces (rerun with --update at a clean commit, or fix the code)"
  exit 1
fi
echo "results.sh: $ran entries checked, all equal to $doc"
