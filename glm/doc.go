// Package glm implements L2-regularised generalised linear models released by output
// perturbation, and their per-example Fisher information leakage (FIL).
//
// The model minimises
//
//	F(w) = Σ_i ω_i ℓ(wᵀx̃_i, y_i) + (nλ/2)‖w‖²
//
// over w ∈ R^p, where x̃_i = x_i (p = d) or x̃_i = [1, x_i] with a constant-1 bias feature
// in coordinate 0 (p = d+1; the bias is regularised like every other weight), ω_i are
// optional per-example weights (default 1) and n is the number of examples. Two losses
// are provided:
//
//   - Logistic: labels y ∈ {0, 1}, ℓ(a, y) = log(1 + e^a) − y·a, ℓ' = s(a) − y, ℓ” = s(1−s).
//   - LeastSquares: labels y ∈ {0, 1} are mapped to targets t = 2y − 1 ∈ {−1, +1},
//     ℓ(a, y) = ½(a − t)², ℓ' = a − t, ℓ” = 1.
//
// Fit solves the problem by Newton's method with a Cholesky solve of the Hessian
// H = Σ_i ω_i ℓ”_i x̃_i x̃_iᵀ + nλI and reports the gradient norm it reached.
// The released model is w̃ = w* + N(0, σ²I) (Model.Perturb).
//
// Per-example FIL (Hannun et al. 2021, "Measuring Data Leakage in Machine-Learning
// Models with Fisher Information", Sec. 4; Guo et al. 2022, "Bounding Training Data
// Reconstruction in Private (Deep) Learning", Sec. 7.1): with labels public, the
// Jacobian of the minimiser w.r.t. the d raw input pixels of example i is
//
//	J_i = −ω_i H⁻¹ (a_i x̃_i uᵀ + b_i E),   a_i = ℓ''(w*ᵀx̃_i), b_i = ℓ'(w*ᵀx̃_i),
//
// where u ∈ R^d is w* without its bias coordinate and E = ∂x̃/∂x (p×d: the identity, or
// the identity below a zero bias row). For least squares this is the same formula with
// a_i = 1 and b_i = w*ᵀx̃_i − t_i, i.e. ∇_x∇_wℓ = x̃uᵀ + (wᵀx̃ − t)E. The FIM of the
// released w̃ is J_iᵀJ_i/σ²; dFIL = ‖J_i‖_F²/(σ²d) and η_i = ‖J_i‖₂/σ.
//
// Analysis factorises H once (symmetric eigendecomposition H = QΛQᵀ) and then evaluates
// every example in O(p²) (one row of X̃Q) plus O(p) per Lanczos step, never forming the
// n×p×d tensor of Jacobians: ‖J_i‖_F² = ω_i²[a²‖u‖²‖Mx̃‖² + 2ab x̃ᵀM²ũ + b²‖ME‖_F²]
// with M = H⁻¹, ũ = Eu, and ‖J_i‖₂² is the top eigenvalue of a diagonal-plus-rank-3
// operator in the eigenbasis of H, found by Lanczos iteration.
//
// IRFIL implements Hannun et al. (2021) Algorithm 1 (iteratively reweighted FIL) with
// weight clamping (AttributeIRFIL: its attribute-level form). Inverter is the model
// side of their attribute inversion (Sec. 6.4): the exact refit with one row changed,
// its Hessian and Jacobians, and the FIL prediction (Predict) of an attack's error.
//
// Hannun et al.'s setting: FitPCA / FeaturePreprocess map the images to unit-ball +
// PCA features (Setup.PCA; an SVD of the centred data by gonum stat.PC), and
// FILOptions.WithLabel adds the label column ω_i H⁻¹x̃_i to J_i, so that η is over
// (x_i, y_i) as theirs is. EtaByClass, CompareEtaHeuristics and Model.ExampleLoss give
// the per-class η and the η-vs-loss comparison of their Table 1 and Figs. 2–4.
//
// The experiments behind 'dpfil glm' are library calls with typed reports: a Setup
// names the dataset, loss, λ, σ and the accounting radius; RunFIL and RunIRFIL fit,
// compute and write their CSV and PNG files (image grids and plots are drawn by
// package plot). The attacks live in package attack: the GLM reconstruction attack
// (attack.RunGLMExperiment) and the attribute inversion (attack.RunInvert,
// 'dpfil glm invert').
package glm
