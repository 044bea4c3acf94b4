package accounting

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/integrate/quad"
)

// chi2Quad2D is χ²(P‖Q) = ∫ (P − Q)²/Q for two mixtures of isotropic 2-D Gaussians
// with noise σ (weights w, means m), by a product Gauss–Legendre rule (12 nodes per
// panel of width σ) over [−L, L]², L = 4 + 10σ (all means lie within norm 3).
func chi2Quad2D(sigma float64, wp []float64, mp [][2]float64, wq []float64, mq [][2]float64) float64 {
	L := 4 + 10*sigma
	panels := int(math.Ceil(2 * L / sigma))
	h := 2 * L / float64(panels)
	xs, ws := make([]float64, 12), make([]float64, 12)
	quad.Legendre{}.FixedLocations(xs, ws, 0, h)
	var nodes, weights []float64
	for p := 0; p < panels; p++ {
		for i := range xs {
			nodes = append(nodes, -L+float64(p)*h+xs[i])
			weights = append(weights, ws[i])
		}
	}
	dens := func(w []float64, m [][2]float64, x, y float64) float64 {
		s := 0.0
		for k := range w {
			dx, dy := x-m[k][0], y-m[k][1]
			s += w[k] * math.Exp(-(dx*dx+dy*dy)/(2*sigma*sigma))
		}
		return s / (2 * math.Pi * sigma * sigma)
	}
	sum := 0.0
	for i, x := range nodes {
		for j, y := range nodes {
			p, q := dens(wp, mp, x, y), dens(wq, mq, x, y)
			if q > 0 {
				sum += weights[i] * weights[j] * (p - q) * (p - q) / q
			}
		}
	}
	return sum
}

func randUnitBall(r *rand.Rand) [2]float64 {
	for {
		v := [2]float64{2*r.Float64() - 1, 2*r.Float64() - 1}
		if v[0]*v[0]+v[1]*v[1] <= 1 {
			return v
		}
	}
}

// The proven Poisson replace-one bound is never below the exact χ² of the one-step
// mixtures (1−q)N(0) + qN(a) vs (1−q)N(0) + qN(b), for antipodal, random and
// aligned pairs of clipped gradients, and it is tight at q = 1.
func TestOrder2ReplaceOnePoissonAboveQuadrature(t *testing.T) {
	if testing.Short() {
		t.Skip("quadrature grid: run without -short")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, sigma := range []float64{0.5, 1, 2} {
		for _, q := range []float64{0.01, 0.1, 0.5, 0.9, 1} {
			b, err := Order2StepRDP(ReplaceOne, SamplingPoisson, q, sigma)
			if err != nil {
				t.Fatal(err)
			}
			bound := math.Expm1(b)
			pairs := [][2][2]float64{{{1, 0}, {-1, 0}}, {{1, 0}, {0, 1}}, {{0.3, 0.2}, {0.3, 0.2}}}
			for k := 0; k < 4; k++ {
				pairs = append(pairs, [2][2]float64{randUnitBall(r), randUnitBall(r)})
			}
			for k, pr := range pairs {
				chi := chi2Quad2D(sigma, []float64{1 - q, q}, [][2]float64{{0, 0}, pr[0]}, []float64{1 - q, q}, [][2]float64{{0, 0}, pr[1]})
				if chi > bound*(1+1e-7) {
					t.Errorf("σ=%v q=%v pair %v: exact χ² %.10g > bound %.10g", sigma, q, pr, chi, bound)
				}
				if k == 0 {
					ratio := chi / bound
					if q == 1 && math.Abs(ratio-1) > 1e-6 {
						t.Errorf("σ=%v q=1: bound %v not tight (antipodal χ² %v)", sigma, bound, chi)
					}
					if q == 0.01 && sigma >= 1 && ratio < 0.95 {
						t.Errorf("σ=%v q=0.01: bound %v loose vs antipodal %v (ratio %v)", sigma, bound, chi, ratio)
					}
				}
			}
		}
	}
}

// Sampling without replacement (B of N) under replace-one: the exact χ² of the
// one-step outputs for small adversarial and random datasets never exceeds the
// Zhu–Dong–Wang bound.
func TestOrder2ReplaceOneUniformAboveQuadrature(t *testing.T) {
	if testing.Short() {
		t.Skip("quadrature grid: run without -short")
	}
	r := rand.New(rand.NewPCG(3, 4))
	subsets := func(n, b int) [][]int {
		var out [][]int
		for m := 0; m < 1<<n; m++ {
			var s []int
			for i := 0; i < n; i++ {
				if m&(1<<i) != 0 {
					s = append(s, i)
				}
			}
			if len(s) == b {
				out = append(out, s)
			}
		}
		return out
	}
	for _, sigma := range []float64{0.7, 1.5} {
		for _, nb := range [][2]int{{3, 1}, {4, 2}} {
			n, bsz := nb[0], nb[1]
			q := float64(bsz) / float64(n)
			bd, err := Order2StepRDP(ReplaceOne, SamplingUniform, q, sigma)
			if err != nil {
				t.Fatal(err)
			}
			bound := math.Expm1(bd)
			for trial := 0; trial < 3; trial++ {
				// record 0 is z (a) in D and z′ (b) in D′; the others are shared.
				recs := make([][2]float64, n)
				for i := range recs {
					recs[i] = randUnitBall(r)
				}
				a, b := [2]float64{1, 0}, [2]float64{-1, 0}
				if trial == 0 { // the adversarial case of the derivation: others at a
					for i := 1; i < n; i++ {
						recs[i] = [2]float64{0, 1}
					}
				} else if trial == 2 {
					a, b = randUnitBall(r), randUnitBall(r)
				}
				var wp, wq []float64
				var mp, mq [][2]float64
				for _, s := range subsets(n, bsz) {
					var sp, sq [2]float64
					for _, i := range s {
						gp, gq := recs[i], recs[i]
						if i == 0 {
							gp, gq = a, b
						}
						sp[0], sp[1] = sp[0]+gp[0], sp[1]+gp[1]
						sq[0], sq[1] = sq[0]+gq[0], sq[1]+gq[1]
					}
					wp, mp = append(wp, 1), append(mp, sp)
					wq, mq = append(wq, 1), append(mq, sq)
				}
				for i := range wp {
					wp[i] /= float64(len(wp))
					wq[i] /= float64(len(wq))
				}
				chi := chi2Quad2D(sigma, wp, mp, wq, mq)
				if chi > bound*(1+1e-7) {
					t.Errorf("σ=%v N=%d B=%d trial %d: exact χ² %v > bound %v", sigma, n, bsz, trial, chi, bound)
				}
			}
		}
	}
}

func TestOrder2StepRDP(t *testing.T) {
	for _, sigma := range []float64{0.3, 0.8, 1, 3, 30} {
		for _, q := range []float64{1e-4, 0.01, 0.3, 1} {
			ar, err := Order2StepRDP(AddRemove, SamplingPoisson, q, sigma)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := SampledGaussianRDP(q, sigma, 2)
			if ar != want {
				t.Errorf("add-remove Poisson = %v, want MTZ %v", ar, want)
			}
			rp, _ := Order2StepRDP(ReplaceOne, SamplingPoisson, q, sigma)
			ru, _ := Order2StepRDP(ReplaceOne, SamplingUniform, q, sigma)
			// Independent direct formula.
			x := 1 / (sigma * sigma)
			S, E := 4*math.Sinh(x), math.Expm1(4*x)
			direct := math.Log1p(q * q * math.Min(E/q, (1-q)*S+q*E))
			if q < 1 {
				direct = math.Log1p(q * q * math.Min(math.Min(E/q, (1-q)*S+q*E), S/(1-q)))
			}
			if math.Abs(rp-direct) > 1e-12*direct {
				t.Errorf("σ=%v q=%v: replace-one Poisson %v, direct %v", sigma, q, rp, direct)
			}
			if !(rp >= ar && ru >= rp) {
				t.Errorf("σ=%v q=%v: want add-remove %v ≤ replace Poisson %v ≤ replace uniform %v", sigma, q, ar, rp, ru)
			}
			if q == 1 && math.Abs(rp-4/(sigma*sigma)) > 1e-12*rp {
				t.Errorf("σ=%v q=1: replace-one %v, want 4/σ² = %v", sigma, rp, 4/(sigma*sigma))
			}
		}
	}
	// Tiny σ: no overflow, finite and ≈ 2 log q + 4/σ².
	v, err := Order2StepRDP(ReplaceOne, SamplingPoisson, 0.01, 0.01)
	if err != nil || math.IsInf(v, 0) || math.Abs(v-(2*math.Log(0.01)+math.Log(2)+1e4-math.Log(0.99))) > 1e-6 {
		t.Errorf("σ = 0.01: %v %v", v, err)
	}
	// The example: q = 0.01, σ = 1, T = 1000 — the replace-one MSE bound is
	// about 3.2× below the add/remove one the paper's code reported.
	ar, _ := Order2StepRDP(AddRemove, SamplingPoisson, 0.01, 1)
	rp, _ := Order2StepRDP(ReplaceOne, SamplingPoisson, 0.01, 1)
	ratio := MSEBoundRDP(1000*ar) / MSEBoundRDP(1000*rp)
	if ratio < 3 || ratio > 4 {
		t.Errorf("MSE bound ratio add-remove/replace-one = %v, want ≈ 3.2", ratio)
	}
	for _, bad := range []struct {
		adj Adjacency
		s   Sampling
	}{{AddRemove, SamplingUniform}, {AddRemove, SamplingShuffle}, {ReplaceOne, SamplingShuffle}, {Adjacency(7), SamplingPoisson}} {
		if _, err := Order2StepRDP(bad.adj, bad.s, 0.1, 1); err == nil {
			t.Errorf("Order2StepRDP(%v, %v): want an error", bad.adj, bad.s)
		}
	}
	if _, err := Order2StepRDP(ReplaceOne, SamplingPoisson, math.NaN(), 1); err == nil {
		t.Error("NaN q: want an error")
	}
	e, _ := shuffleEpochOrder2(ReplaceOne, 2)
	e1, _ := shuffleEpochOrder2(AddRemove, 2)
	if e != 1 || e1 != 0.25 {
		t.Errorf("shuffle epoch order 2: replace %v (want 1), add-remove %v (want 0.25)", e, e1)
	}
}
