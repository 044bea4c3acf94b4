// Package attack implements reconstruction attacks and the experiments that measure
// them against privacy bounds:
//
//   - the informed-adversary game of Hayes, Mahloujifar and Balle (2023),
//     "Bounding Training Data Reconstruction in DP-SGD": the prior-aware and
//     gradient-based attacks on DP-SGD transcripts, the ReRo bounds (ComputeBounds),
//     PlayGame and Sweep (success vs ε, K or q) and Replay of recorded transcripts;
//   - RecoNN, the learned reconstructor of Balle, Cherubin and Hayes (2022),
//     "Reconstructing Training Data with Informed Adversaries" (RunRecoNN,
//     RunRecoNNExperiment), reported next to the FIL and RDP bounds of Guo et al.
//     (2022), "Bounding Training Data Reconstruction in Private (Deep) Learning";
//   - Balle et al.'s closed-form GLM attack on output perturbation (GLMAttack) and
//     its comparison with the per-example FIL bound (RunGLMExperiment, CompareFIL),
//     Guo et al. (2022) Sec. 7.2;
//   - the attribute inversion of an output-perturbed GLM (Hannun et al. 2021,
//     "Measuring Data Leakage in Machine-Learning Models with Fisher Information",
//     Sec. 6.4; Fredrikson et al. 2014): white-box and black-box adversaries
//     (WhiteBox, BlackBox, RunInversion) against the FIL prediction of package glm's
//     Inverter (RunInvert, 'dpfil glm invert').
//
// Every experiment takes a spec struct and returns a typed report whose JSON is what
// 'dpfil attack', 'dpfil glm attack' and 'dpfil glm invert' print.
package attack
