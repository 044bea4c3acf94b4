#!/usr/bin/env bash
# Reduced Edmunds (thesis) Tables 3.1–3.2 on the embedded MNIST: dFIL and accuracy
# under public pretraining, pruning, freezing and learned noise (docs/results.md,
# "Edmunds"). Trains every row with DPFIL into OUT (one result JSON per row:
# OUT/MODEL-ROW.json) and prints the two markdown tables of docs/results.md.
#
# Usage: scripts/edmunds-tables.sh DPFIL OUT [MODEL...]   (default models: linear mlp)
# Needs jq. About 25 CPU-minutes for both models on this 2-core machine.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 DPFIL OUT [MODEL...]" >&2; exit 2; }
dpfil=$1 out=$2
shift 2
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(linear mlp)
command -v jq >/dev/null || { echo "edmunds-tables.sh: needs jq" >&2; exit 2; }
mkdir -p "$out"

# rows: name<TAB>label<TAB>flags (after the common flags C; P = the pretraining flags)
rows() {
  local model=$1
  printf '%s\t%s\t%s\n' sgd "SGD (pretrained, non-private fine-tune)" "P --sigma 0 --fil-coords 0"
  printf '%s\t%s\t%s\n' dpsgd-scratch "DPSGD, no pretraining" "--pretrain-public 0.5 --pretrain-steps -1"
  printf '%s\t%s\t%s\n' dpsgd "DPSGD (pretrained)" "P"
  printf '%s\t%s\t%s\n' prune "+ prune 50 %" "P --prune-fraction 0.5"
  if [ "$model" = mlp ]; then
    printf '%s\t%s\t%s\n' freeze "+ freeze first layer (dense1)" "P --freeze dense1"
  fi
  printf '%s\t%s\t%s\n' noise "+ learned noise (r = 16, ρ = 0.25)" "P --noise-rank 16 --noise-samples 1000"
  printf '%s\t%s\t%s\n' noise-prune "+ learned noise + prune 50 %" "P --noise-rank 16 --noise-samples 1000 --prune-fraction 0.5"
}

for model in "${models[@]}"; do
  C=(--model "$model" --dataset mnist-embedded --steps 50 --batch 256 --lr 0.5 --sigma 1 --clip 1 --fil-coords 20 --repeats 3 --seed 1 --quiet --json)
  P=(--pretrain-public 0.5 --pretrain-steps 300 --pretrain-batch 256)
  while IFS=$'\t' read -r name _ flags; do
    f="$out/$model-$name.json"
    [ -s "$f" ] && continue
    args=()
    for a in $flags; do
      if [ "$a" = P ]; then args+=("${P[@]}"); else args+=("$a"); fi
    done
    echo "edmunds-tables.sh: $model $name" >&2
    "$dpfil" train "${C[@]}" "${args[@]}" >"$f.tmp"
    mv "$f.tmp" "$f"
  done < <(rows "$model")
done

for model in "${models[@]}"; do
  pre=$(jq -r '.tuning.pretrain_accuracy // empty' "$out/$model-dpsgd.json")
  eps=$(jq -r '.epsilon*1000|round/1000' "$out/$model-dpsgd.json")
  printf '**%s** (pretrain accuracy, i.e. the thesis'"'"'s "Pretrain" row: %.4f; ε = %s at δ = 1e-5 for every private row)\n\n' "$model" "$pre" "$eps"
  echo '| method | test accuracy mean (std) | max dFIL | mean dFIL | median dFIL | frozen | held-out FIL reduction | time |'
  echo '|---|---|---|---|---|---|---|---|'
  while IFS=$'\t' read -r name label _; do
    jq -r --arg row "$label" '
      def f4: . * 10000 | round / 10000 | tostring | if test("\\.") then . else . + ".0" end
        | (split(".") as $p | $p[0] + "." + ($p[1] + "0000")[0:4]);
      def sd: (. as $a | ($a | add / length) as $m | ($a | map((. - $m) * (. - $m)) | add / (length - 1)) | sqrt);
      [ $row,
        "\(.test_accuracy | f4) (\(.test_accuracies | sd | f4))",
        (if .fil then (.dfil_max | f4) else "–" end),
        (if .fil then (.dfil_mean | f4) else "–" end),
        (if .fil then (.dfil_median | f4) else "–" end),
        (if (.tuning.frozen_params // 0) > 0 then "\(.tuning.frozen_params)/\(.num_params)" else "0" end),
        (if .tuning.noise then "\(.tuning.noise.held_out_reduction * 100 | round) %" else "–" end),
        "\(.wall_seconds | round) s" ] | "| " + join(" | ") + " |"' "$out/$model-$name.json"
  done < <(rows "$model")
  echo
done
