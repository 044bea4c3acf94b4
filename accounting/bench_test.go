package accounting

import (
	"testing"
)

// thousandOrders is 500 fractional orders 1.1…50.9 (step 0.1) and 500 integer
// orders 52…551.
func thousandOrders() []float64 {
	var o []float64
	for i := 11; i <= 510; i++ {
		o = append(o, float64(i)/10)
	}
	for i := 52; i <= 551; i++ {
		o = append(o, float64(i))
	}
	return o
}

// BenchmarkRDPStep is one (q, σ) at 1 000 orders.
func BenchmarkRDPStep(b *testing.B) {
	o := thousandOrders()
	for b.Loop() {
		if _, err := StepRDP(0.01, 1.1, o); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRDP composes a heterogeneous 10⁴-step schedule at 1 000 orders, one
// Compose call per step as a trainer does: σ decays from 2 to 0.8 in 20 stages of
// 500 steps, and q doubles from 0.005 to 0.01 halfway (20 distinct (q, σ) pairs).
func BenchmarkRDP(b *testing.B) {
	o := thousandOrders()
	for b.Loop() {
		r := NewRDP(o)
		for t := 0; t < 10000; t++ {
			stage := t / 500
			sigma := 2 - 1.2*float64(stage)/19
			q := 0.005
			if t >= 5000 {
				q = 0.01
			}
			if err := r.Compose(q, sigma, 1); err != nil {
				b.Fatal(err)
			}
		}
		if _, _, err := r.Epsilon(1e-5, ConversionImproved); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReRo is the whole Monte Carlo (ν and μ draws) for N = 10⁵, T = 100,
// q = 0.01; it reports ns per sample-step (2·N·T sample-steps) of wall time.
func BenchmarkReRo(b *testing.B) {
	const n, steps = 100000, 100
	for b.Loop() {
		if _, err := ReRoMonteCarlo(ReRoConfig{Q: 0.01, Sigma: 1, Steps: steps, Kappa: 0.01, Samples: n, Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(2*n*steps), "ns/sample-step")
}

// BenchmarkReRoKernel is the single-threaded log-ratio kernel: ns per sample-step.
func BenchmarkReRoKernel(b *testing.B) {
	g := newRatioGen(0.01, 1, 1000)
	r := newXoshiro(1, 0)
	ls := make([]float64, 1)
	for b.Loop() {
		g.fill(r, ls, false)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/sample-step")
}
