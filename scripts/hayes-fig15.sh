#!/bin/sh
# Hayes et al. Fig. 15 panel (ε = 32 at δ = 1e-5, |π| = 100, T = 100, hard clipping C = 1):
# σ for each q (N = 100 records, batch = q·N), then the ReRo and Fano bounds.
D=${DPFIL:-dpfil}
for b in 1 5 10 25 50 75 99; do
  q=$(echo "$b/100" | bc -l | sed 's/^\./0./;s/0*$//')
  s=$($D account dpsgd --n 100 --batch $b --steps 100 --target-epsilon 32 --delta 1e-5 --clip-mode hard --json | jq -r .sigma)
  $D account rero --q $q --sigma $s --steps 100 --prior-size 100 --monte-carlo=false --json |
    jq -r '[.q, .sigma, .gamma, .gamma_rdp, .fano.success] | @tsv'
done
