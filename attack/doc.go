// Package attack implements reconstruction attacks: the GLM attack of Balle et al. and
// the prior-aware and gradient-based attacks of Hayes et al. on DP-SGD transcripts.
package attack
