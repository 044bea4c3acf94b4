// Package plot draws dpfil's figures with gonum/plot, those of Guo, Karrer, Chaudhuri
// and van der Maaten (2022), "Bounding training data reconstruction in private (deep)
// learning" (ICML), and of Hayes, Mahloujifar and Balle (2023), "Bounding training
// data reconstruction in DP-SGD" (NeurIPS):
//
//   - Pareto: test accuracy against the MSE lower bounds of a sweep, with Pareto
//     frontiers (Guo et al. Fig. 5);
//   - Histogram: per-sample dFIL or MSE bound 1/dFIL over the training set (Fig. 2);
//   - Scatter: the MSE bound predicted by dFIL against the MSE an attack realised,
//     log-log with y = x (Fig. 3);
//   - ImageGrid: training samples or reconstructions (Fig. 4 and 6);
//   - Attack: attack success with confidence intervals and the ReRo bounds against
//     ε, the prior size K or the sampling rate q (Hayes et al. Fig. 2, 3 and 5).
//
// WritePareto, WriteHist, WriteScatter and WriteImages read their inputs (sweep
// results, a run's dfil.npy, a CSV file, a dataset), draw and write the figure, and
// return a typed report; they are what 'dpfil plot' runs. Every figure is written at
// an exact pixel size (PNG) or the matching point size (SVG, PDF at 96 px per inch).
package plot
