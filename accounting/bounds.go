package accounting

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// MSEBoundRDP is Theorem 1 of Guo et al. for an unbiased attacker on [0,1]^d (every
// diameter 1): MSE ≥ 1/(4(e^{ε₂} − 1)), ε₂ the order-2 RDP of the whole run. It is
// +Inf for ε₂ = 0 and NaN for negative or NaN ε₂.
func MSEBoundRDP(eps2 float64) float64 {
	if math.IsNaN(eps2) || eps2 < 0 {
		return math.NaN()
	}
	return 1 / (4 * math.Expm1(eps2))
}

// MSEBoundRDPGeneral is Theorem 1 in full: for a (2, ε₂)-RDP mechanism and data space
// with per-coordinate diameters diam (length d),
// MSE ≥ Σ_i γ_i² diam_i²/(4d) / (e^{ε₂} − 1) + biasSq, where γ_i = inf |∂μ_i/∂z_i|
// (nil gamma means an unbiased attacker, γ_i = 1) and biasSq = ‖μ(z) − z‖²/d.
func MSEBoundRDPGeneral(eps2 float64, diam, gamma []float64, biasSq float64) (float64, error) {
	if math.IsNaN(eps2) || math.IsInf(eps2, 0) || eps2 < 0 {
		return 0, fmt.Errorf("order-2 RDP %v must be finite and ≥ 0", eps2)
	}
	if len(diam) == 0 {
		return 0, fmt.Errorf("need at least one diameter")
	}
	if gamma != nil && len(gamma) != len(diam) {
		return 0, fmt.Errorf("%d gammas for %d diameters", len(gamma), len(diam))
	}
	if math.IsNaN(biasSq) || math.IsInf(biasSq, 0) || biasSq < 0 {
		return 0, fmt.Errorf("squared bias %v must be finite and ≥ 0", biasSq)
	}
	num := 0.0
	for i, dm := range diam {
		if math.IsNaN(dm) || math.IsInf(dm, 0) || dm < 0 {
			return 0, fmt.Errorf("diameter %d = %v must be finite and ≥ 0", i, dm)
		}
		g := 1.0
		if gamma != nil {
			g = gamma[i]
			if math.IsNaN(g) || math.IsInf(g, 0) {
				return 0, fmt.Errorf("gamma %d = %v must be finite", i, g)
			}
		}
		num += g * g * dm * dm
	}
	num /= 4 * float64(len(diam))
	return num/math.Expm1(eps2) + biasSq, nil
}

// MSEBoundFIL is Theorem 2 for an unbiased attacker: MSE ≥ 1/dFIL with
// dFIL = Tr(I_h(z))/d. +Inf for dFIL = 0; NaN for negative or NaN dFIL.
func MSEBoundFIL(dfil float64) float64 {
	if math.IsNaN(dfil) || dfil < 0 {
		return math.NaN()
	}
	return 1 / dfil
}

// MSEBoundFILTrace is Theorem 2 in its trace form: MSE ≥ d/Tr(I_h(z)).
func MSEBoundFILTrace(trace float64, d int) (float64, error) {
	if d <= 0 {
		return 0, fmt.Errorf("dimension %d must be > 0", d)
	}
	if math.IsNaN(trace) || math.IsInf(trace, 0) || trace < 0 {
		return 0, fmt.Errorf("FIM trace %v must be finite and ≥ 0", trace)
	}
	return float64(d) / trace, nil
}

// MSEBoundEta is the weakest form of Theorem 2: MSE ≥ 1/η² with η² the largest
// eigenvalue of the FIM (η = ‖J‖₂/σ for the Gaussian mechanism).
func MSEBoundEta(eta float64) float64 {
	if math.IsNaN(eta) || eta < 0 {
		return math.NaN()
	}
	return 1 / (eta * eta)
}

// MSEBoundFILBiased is Theorem 2 for a biased attacker:
// MSE ≥ Tr(J_μ I⁻¹ J_μᵀ)/d + biasSq, with the d×d FIM fim (symmetric positive
// definite) and the d×d Jacobian jmu of the attacker's mean, both row-major;
// jmu = nil means the identity (unbiased attacker).
func MSEBoundFILBiased(fim, jmu []float64, d int, biasSq float64) (float64, error) {
	if d <= 0 {
		return 0, fmt.Errorf("dimension %d must be > 0", d)
	}
	if len(fim) != d*d {
		return 0, fmt.Errorf("FIM has %d entries, want %d×%d", len(fim), d, d)
	}
	if jmu != nil && len(jmu) != d*d {
		return 0, fmt.Errorf("Jacobian has %d entries, want %d×%d", len(jmu), d, d)
	}
	if math.IsNaN(biasSq) || math.IsInf(biasSq, 0) || biasSq < 0 {
		return 0, fmt.Errorf("squared bias %v must be finite and ≥ 0", biasSq)
	}
	for _, v := range fim {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("FIM has a non-finite entry %v", v)
		}
	}
	sym := mat.NewSymDense(d, nil)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			a, b := fim[i*d+j], fim[j*d+i]
			if math.Abs(a-b) > 1e-9*(math.Abs(a)+math.Abs(b)+1e-300) {
				return 0, fmt.Errorf("FIM is not symmetric at (%d,%d): %v vs %v", i, j, a, b)
			}
			sym.SetSym(i, j, (a+b)/2)
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(sym) {
		return 0, fmt.Errorf("FIM is not positive definite: the biased Theorem 2 bound needs an invertible FIM")
	}
	var j mat.Matrix
	if jmu == nil {
		j = eye(d)
	} else {
		for _, v := range jmu {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, fmt.Errorf("Jacobian has a non-finite entry %v", v)
			}
		}
		j = mat.NewDense(d, d, append([]float64(nil), jmu...))
	}
	// X = I⁻¹ Jᵀ; Tr(J X).
	var x mat.Dense
	if err := ch.SolveTo(&x, j.T()); err != nil {
		return 0, fmt.Errorf("solve with the FIM: %w", err)
	}
	var jx mat.Dense
	jx.Mul(j, &x)
	return mat.Trace(&jx)/float64(d) + biasSq, nil
}

func eye(d int) *mat.Dense {
	m := mat.NewDense(d, d, nil)
	for i := 0; i < d; i++ {
		m.Set(i, i, 1)
	}
	return m
}

// MSEBoundVanTrees is the van Trees (Bayesian Cramér–Rao) bound of Edmunds' thesis
// eq. 1.3 for a possibly biased attacker and data z ∼ π:
// E_π E_h[‖ẑ − z‖²/d] ≥ 1/(E_π[dFIL(z)] + Tr(J(f_π))/d), where meanDFIL = E_π[dFIL]
// and priorFisherTrace = Tr(J(f_π)) is the trace of the prior's Fisher information
// (e.g. d/s² for an isotropic Gaussian prior with variance s²).
func MSEBoundVanTrees(meanDFIL, priorFisherTrace float64, d int) (float64, error) {
	if d <= 0 {
		return 0, fmt.Errorf("dimension %d must be > 0", d)
	}
	if math.IsNaN(meanDFIL) || math.IsInf(meanDFIL, 0) || meanDFIL < 0 {
		return 0, fmt.Errorf("mean dFIL %v must be finite and ≥ 0", meanDFIL)
	}
	if math.IsNaN(priorFisherTrace) || math.IsInf(priorFisherTrace, 0) || priorFisherTrace < 0 {
		return 0, fmt.Errorf("prior Fisher information trace %v must be finite and ≥ 0", priorFisherTrace)
	}
	den := meanDFIL + priorFisherTrace/float64(d)
	return 1 / den, nil
}
