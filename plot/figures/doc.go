// Package figures draws dpfil's figures from its result files with the primitives
// of package plot, those of Guo, Karrer, Chaudhuri and van der Maaten (2022),
// "Bounding training data reconstruction in private (deep) learning" (ICML), and of
// Hayes, Mahloujifar and Balle (2023), "Bounding training data reconstruction in
// DP-SGD" (NeurIPS):
//
//   - Pareto: test accuracy against the MSE lower bounds of a sweep's results, with
//     Pareto frontiers (Guo et al. Fig. 5);
//   - WriteHist: per-sample dFIL or MSE bound 1/dFIL of a run's dfil.npy (Fig. 2);
//   - WriteScatter: the MSE bound predicted by dFIL against the MSE an attack
//     realised, from two columns of a CSV file (Fig. 3);
//   - WriteImages: training samples of a dataset, e.g. those of extreme dFIL (Fig. 4);
//   - Attack: attack success with confidence intervals and the ReRo bounds against
//     ε, the prior size K or the sampling rate q, read from an attack sweep's
//     sweep.json (attack.SweepReport) or sweep.csv (Hayes et al. Fig. 2, 3 and 5);
//   - WritePerturbDiag: the per-iteration diagnostics of the learned gradient
//     perturbation g_φ a run records with --perturb-diag (train.ReadPerturbDiag):
//     norms, accuracy and dFIL per iteration, and per iteration the PCA (PCAOf) and
//     cosine panels (Edmunds 2024, Appendix A, Figs. A.1–A.29).
//
// WritePareto, WriteHist, WriteScatter, WriteImages and WritePerturbDiag read their inputs, draw and
// write the figure, and return a typed report; they are what 'dpfil plot' runs. The
// package sits above sweep and attack and reads their files through their own types.
package figures
