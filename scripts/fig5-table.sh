#!/usr/bin/env bash
# Prints the per-run markdown table of a Fig. 5 sweep (docs/results.md) from its
# results.jsonl, in grid order: settings, test accuracy, ε with its accountant, the
# replace-one ε₂ and Theorem 1's RDP bound (and the paper's add-remove value), the FIL
# bounds from the screen's max and median dFIL, the two-stage worst-sample bound with
# its exact-dFIL ≥ 1 count (runs trained with fil_refine_top), and the run's wall time.
#
# Usage: scripts/fig5-table.sh RESULTS.jsonl...     (needs jq)
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 RESULTS.jsonl..." >&2; exit 2; }
command -v jq >/dev/null || { echo "fig5-table.sh: needs jq" >&2; exit 2; }
echo '| # | T | lr | C | σ | test acc. | ε (δ = 1e-5) | ε₂ (replace-one) | MSE ≥ (RDP) | paper'"'"'s add-remove RDP bound | MSE ≥ (screen max dFIL) | MSE ≥ (two-stage max dFIL) | refined with exact dFIL ≥ 1 | MSE ≥ (median dFIL) | run wall s |'
echo '|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|'
jq -s -r '
  def g3: if . == null then "∞" elif . == 0 then "0" else
    (. as $x | ($x | fabs | log10 | floor) as $e |
     if $e >= -3 and $e < 4 then ($x * pow(10; 2 - $e) | round / pow(10; 2 - $e) | tostring)
     else ($x / pow(10; $e) * 100 | round / 100 | tostring) + "e" + ($e | tostring) end) end;
  sort_by(.index)[] | .result as $r | .config as $c |
  [ (.index | tostring), ($c.steps | tostring), ($c.lr | tostring), ($c.clip | tostring), ($c.sigma | tostring),
    ($r.test_accuracy | tostring),
    "\($r.epsilon | g3) (\($r.privacy.accountant // "–"))",
    ($r.rdp_order2 | g3), ($r.mse_bound_rdp | g3),
    ($r.privacy.theorem1.paper_mse_bound_rdp_add_remove | g3),
    ($r.mse_bound_fil_max | g3),
    (if $r.fil_two_stage then ($r.fil_two_stage.mse_bound_max | g3) + " (sample \($r.fil_two_stage.argmax))" else "–" end),
    (if $r.fil_two_stage then "\($r.fil_two_stage.refined_dfil_ge_1) / \($r.fil_two_stage.top)" else "–" end),
    ($r.mse_bound_fil_median | g3),
    ($r.wall_seconds | round | tostring) ] | "| " + join(" | ") + " |"' "$@"
