#!/bin/sh
# Hayes et al. Fig. 15 panels (T = 100, hard clipping C = 1, δ = 1e-5, N = 100 records,
# batch = q·N): for each q, σ reaching ε = $EPS (PLD, add-remove, Poisson), then the
# rigorous ReRo bound γ, the RDP-based ReRo bound and the Fano bound for each prior
# size in $KS. Defaults: EPS=32 KS=100 (the panel the caption quotes).
# Output, one line per q: q σ, then γ RDP-ReRo Fano for each K of $KS (tab-separated).
D=${DPFIL:-dpfil}
EPS=${EPS:-32}
KS=${KS:-100}
for b in 1 5 10 25 50 75 99; do
  q=$(echo "$b/100" | bc -l | sed 's/^\./0./;s/0*$//')
  s=$($D account dpsgd --n 100 --batch $b --steps 100 --target-epsilon "$EPS" --delta 1e-5 --clip-mode hard --json | jq -r .sigma)
  line="$q	$s"
  for k in $KS; do
    line="$line	$($D account rero --q $q --sigma $s --steps 100 --prior-size $k --monte-carlo=false --json |
      jq -r '[.gamma, .gamma_rdp, .fano.success] | @tsv')"
  done
  printf '%s\n' "$line"
done
