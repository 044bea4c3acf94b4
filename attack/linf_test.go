package attack

import (
	"math"
	"testing"
)

// TestLinfKappa: the binomial tail against a direct sum (small n) and Hayes et al.'s
// printed value at ρ = 1, where the two formulas agree; below ρ = 1 the paper's
// (2δ)^{ρd} is far smaller than the true chance.
func TestLinfKappa(t *testing.T) {
	binom := func(n, k int) float64 {
		c := 1.0
		for i := 1; i <= k; i++ {
			c *= float64(n-k+i) / float64(i)
		}
		return c
	}
	for _, tc := range []struct {
		n, m int
		p    float64
	}{{10, 0, 0.3}, {10, 3, 0.3}, {10, 10, 0.25}, {20, 7, 0.5}, {30, 29, 0.9}} {
		want := 0.0
		for k := tc.m; k <= tc.n; k++ {
			want += binom(tc.n, k) * math.Pow(tc.p, float64(k)) * math.Pow(1-tc.p, float64(tc.n-k))
		}
		if got := math.Exp(logBinomialTail(tc.n, tc.m, tc.p)); math.Abs(got-want) > 1e-12*math.Max(want, 1e-300) {
			t.Errorf("P(Bin(%d, %v) ≥ %d) = %v, direct sum %v", tc.n, tc.p, tc.m, got, want)
		}
	}
	if !math.IsInf(logBinomialTail(5, 6, 0.5), -1) {
		t.Error("m > n: want log 0")
	}
	// ρ = 1, d = 784: (64/255)^784 = 10^−470.68; the paper's 9.66e-473 uses 64/256.
	if got := logBinomialTail(784, 784, 2*LinfDelta) / math.Ln10; math.Abs(got-(-470.6824)) > 1e-3 {
		t.Errorf("log10 κ at ρ = 1: %v", got)
	}
	// ρ = 0.6: the binomial tail is 10^−94.4, the paper's formula 10^−283.
	if got := logBinomialTail(784, 471, 2*LinfDelta) / math.Ln10; math.Abs(got-(-94.435)) > 1e-2 {
		t.Errorf("log10 κ at ρ = 0.6: %v", got)
	}
}

// TestLinfPoints: a perfect reconstruction succeeds at every ρ, one off by more than
// δ on 30 % of its pixels succeeds up to ρ = 0.7 only, and the bounds are reported.
func TestLinfPoints(t *testing.T) {
	const d = 100
	pool := Pool{X: make([]float64, 2*d), Y: []int{0, 1}, D: d}
	for i := range pool.X {
		pool.X[i] = 0.5
	}
	perfect := make([]float64, d)
	off := make([]float64, d)
	for i := range perfect {
		perfect[i], off[i] = 0.5, 0.5
		if i < 30 {
			off[i] = 0.5 + 2*LinfDelta
		}
	}
	res := []TrialResult{{Prior: []int{0, 1}, Target: 0, Reconstruction: perfect}, {Prior: []int{0, 1}, Target: 1, Reconstruction: off}}
	pts, err := linfPoints(pool, res, 1, 2, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pts {
		want := 1
		if p.Rho <= 0.7+1e-12 {
			want = 2
		}
		if p.Successes != want || p.Trials != 2 {
			t.Errorf("ρ = %v: %d of %d successes, want %d", p.Rho, p.Successes, p.Trials, want)
		}
		// every pool image is ½ everywhere: the median guess reconstructs all of them
		// at every ρ (κ ≥ 1, a vacuous bound), the all-zero guess none
		if p.KappaData != 1 || p.KappaDataGuess != "median" || p.Log10GammaData == nil || *p.Log10GammaData != 0 {
			t.Errorf("ρ = %v: data κ %v (%s), log10 γ %v; want 1 by the median, 0", p.Rho, p.KappaData, p.KappaDataGuess, p.Log10GammaData)
		}
		if p.Log10Gamma == nil || !(*p.Log10Gamma >= p.Log10Kappa) || !(p.Log10GammaRDP >= p.Log10Kappa) {
			t.Errorf("ρ = %v: bounds log10 γ %v, RDP %v below log10 κ %v", p.Rho, p.Log10Gamma, p.Log10GammaRDP, p.Log10Kappa)
		}
	}
	// a pool of black images with one bright pixel in ten, at different places: the
	// zero guess (and the median, also zero) is within δ on 90 % of each one's pixels
	dark := Pool{X: make([]float64, 3*d), Y: []int{0, 1, 2}, D: d}
	for k := 0; k < 3; k++ {
		for i := k; i < d; i += 10 {
			dark.X[k*d+i] = 1
		}
	}
	dres := []TrialResult{{Prior: []int{0, 1}, Target: 0, Reconstruction: perfect}}
	dp, err := linfPoints(dark, dres, 1, 2, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range dp {
		want := 0.0
		if p.Rho <= 0.9+1e-12 {
			want = 1
		}
		if p.KappaData != want {
			t.Errorf("dark pool, ρ = %v: data κ %v (%s), want %v", p.Rho, p.KappaData, p.KappaDataGuess, want)
		}
	}
	if pts, _ := linfPoints(pool, res, 0.5, 2, 10); pts[0].Log10Gamma != nil {
		t.Error("q < 1: the closed form is reported")
	}
	if _, err := linfPoints(pool, []TrialResult{{Prior: []int{0}, Reconstruction: perfect[:3]}}, 1, 2, 10); err == nil {
		t.Error("no usable reconstruction: want error")
	}
}
