package accounting

import (
	"math"
	"testing"
)

func TestMSEBoundRDP(t *testing.T) {
	tests := []struct{ eps, want float64 }{
		{math.Log(2), 0.25},      // e^ε − 1 = 1
		{math.Log(1.5), 0.5},     // e^ε − 1 = 1/2
		{1e-12, 1 / (4 * 1e-12)}, // expm1 keeps precision
		{0, math.Inf(1)},
	}
	for _, tc := range tests {
		if got := MSEBoundRDP(tc.eps); math.Abs(got-tc.want) > 1e-9*tc.want && got != tc.want {
			t.Errorf("MSEBoundRDP(%v) = %v, want %v", tc.eps, got, tc.want)
		}
	}
	if !math.IsNaN(MSEBoundRDP(-1)) || !math.IsNaN(MSEBoundRDP(math.NaN())) {
		t.Error("negative/NaN ε must give NaN")
	}
	// Paper observation 3: Z = [0, 100], ε = 2: 10⁴/(4(e²−1)) ≈ 391.
	g, err := MSEBoundRDPGeneral(2, []float64{100}, nil, 0)
	if err != nil || math.Round(g) != 391 {
		t.Errorf("general bound %v, %v", g, err)
	}
	// [0,1]^d with γ = 1 equals MSEBoundRDP; γ and bias enter as γ²·… + bias².
	g1, _ := MSEBoundRDPGeneral(0.7, []float64{1, 1, 1}, nil, 0)
	g2, _ := MSEBoundRDPGeneral(0.7, []float64{1, 1, 1}, []float64{0.5, 0.5, 0.5}, 0.1)
	if math.Abs(g1-MSEBoundRDP(0.7)) > 1e-15 || math.Abs(g2-(0.25*g1+0.1)) > 1e-15 {
		t.Errorf("general bound %v %v", g1, g2)
	}
	for _, bad := range []struct {
		eps     float64
		diam, g []float64
		b       float64
	}{{-1, []float64{1}, nil, 0}, {1, nil, nil, 0}, {1, []float64{1}, []float64{1, 1}, 0},
		{1, []float64{-1}, nil, 0}, {1, []float64{1}, nil, -1}, {1, []float64{1}, []float64{math.NaN()}, 0}} {
		if _, err := MSEBoundRDPGeneral(bad.eps, bad.diam, bad.g, bad.b); err == nil {
			t.Errorf("%+v: want an error", bad)
		}
	}
}

func TestMSEBoundFIL(t *testing.T) {
	if MSEBoundFIL(4) != 0.25 || !math.IsInf(MSEBoundFIL(0), 1) || !math.IsNaN(MSEBoundFIL(-1)) {
		t.Error("MSEBoundFIL")
	}
	if v, err := MSEBoundFILTrace(392, 784); err != nil || v != 2 {
		t.Errorf("trace form %v %v", v, err)
	}
	if _, err := MSEBoundFILTrace(1, 0); err == nil {
		t.Error("d=0: want an error")
	}
	if MSEBoundEta(2) != 0.25 {
		t.Error("MSEBoundEta")
	}
	// Biased form with J = I equals Tr(I⁻¹)/d; for a diagonal FIM that is the mean of
	// the reciprocals, ≥ d/Tr(I) (Cauchy–Schwarz, the chain in Theorem 2's proof).
	fim := []float64{2, 0, 0, 0, 4, 0, 0, 0, 8}
	v, err := MSEBoundFILBiased(fim, nil, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := (0.5 + 0.25 + 0.125) / 3
	if math.Abs(v-want) > 1e-15 {
		t.Errorf("biased, J=I: %v want %v", v, want)
	}
	unb, _ := MSEBoundFILTrace(14, 3)
	if v < unb {
		t.Errorf("Tr(I⁻¹)/d = %v < d/Tr(I) = %v", v, unb)
	}
	// Non-diagonal 2×2 against the explicit inverse: I = [[2,1],[1,2]], I⁻¹ = [[2,−1],[−1,2]]/3,
	// J = [[1,0],[1,1]]: J I⁻¹ Jᵀ has trace (2 + (2−2+2))/3 = 4/3.
	v2, err := MSEBoundFILBiased([]float64{2, 1, 1, 2}, []float64{1, 0, 1, 1}, 2, 0.5)
	if err != nil || math.Abs(v2-(4.0/3/2+0.5)) > 1e-14 {
		t.Errorf("biased 2×2: %v %v", v2, err)
	}
	for _, tc := range []struct {
		fim, j []float64
		d      int
	}{{[]float64{1, 2, 3}, nil, 2}, {[]float64{1, 0, 0, -1}, nil, 2}, {[]float64{1, 2, 0, 1}, nil, 2},
		{[]float64{1, 0, 0, 1}, []float64{1}, 2}, {[]float64{math.NaN(), 0, 0, 1}, nil, 2}} {
		if _, err := MSEBoundFILBiased(tc.fim, tc.j, tc.d, 0); err == nil {
			t.Errorf("%v: want an error", tc)
		}
	}
}

func TestMSEBoundVanTrees(t *testing.T) {
	// Gaussian prior N(0, s²I_d): Tr(J(f_π)) = d/s². With dFIL = 0 the bound is the
	// prior variance s² (the MMSE of guessing the prior mean).
	v, err := MSEBoundVanTrees(0, 784/0.04, 784)
	if err != nil || math.Abs(v-0.04) > 1e-15 {
		t.Errorf("van Trees, no leakage: %v %v", v, err)
	}
	// Gaussian mechanism on a scalar Gaussian: the posterior-mean MSE is exactly
	// 1/(1/σ² + 1/s²), which van Trees attains.
	v, _ = MSEBoundVanTrees(1/0.25, 1/0.5, 1)
	if math.Abs(v-1/(4+2.0)) > 1e-15 {
		t.Errorf("van Trees scalar: %v", v)
	}
	for _, bad := range [][2]float64{{-1, 1}, {1, -1}, {math.NaN(), 1}, {1, math.Inf(1)}} {
		if _, err := MSEBoundVanTrees(bad[0], bad[1], 3); err == nil {
			t.Errorf("%v: want an error", bad)
		}
	}
	if _, err := MSEBoundVanTrees(1, 1, 0); err == nil {
		t.Error("d=0: want an error")
	}
}
