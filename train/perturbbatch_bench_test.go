package train

import (
	"math/rand/v2"
	"testing"

	"github.com/dpfil/dpfil/models"
)

// benchP is the parameter count of the linear model (784 → 10) that Edmunds' Table 3.4
// setting trains on binary MNIST here (the model keeps 10 outputs).
const benchP = 7850

// benchPerturbSamples returns g_φ at that model's sizes (d = 784 pixels, p = benchP,
// hidden 32) and n public samples with `probes` dense probes each.
func benchPerturbSamples(n, probes int) (*perturbNet, []pnSample) {
	const d, p, h = 784, benchP, 32
	rng := rand.New(rand.NewPCG(1, 2))
	net := randomPerturbNet(d, p, h, perturbClips[2], nil, rng)
	sms := make([]pnSample, n)
	for i := range sms {
		sms[i] = randomSample(d, p, probes, nil, rng)
	}
	return net, sms
}

// BenchmarkPerturbLoss is one g_φ AdamW step's loss and gradient over 256 public
// samples with 2 probes: per sample (the reference) and batched (GEMMs).
func BenchmarkPerturbLoss(b *testing.B) {
	net, sms := benchPerturbSamples(256, 2)
	grad := make([]float64, len(net.phi))
	benchPair(b, net, func() {
		for i := range sms {
			net.loss(&sms[i], grad)
		}
	}, func() {
		net.lossBatch(sms, grad)
	})
}

// BenchmarkPerturbFIL is the FIL accountant's g_φ part for 64 private samples with 20
// one-hot coordinates each: per sample and batched.
func BenchmarkPerturbFIL(b *testing.B) {
	net, sms := benchPerturbSamples(64, 20)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range sms {
		sms[i].u = nil
		for range sms[i].gdots {
			sms[i].uIdx = append(sms[i].uIdx, rng.IntN(784))
		}
	}
	out := make([]float64, len(sms))
	benchPair(b, net, func() {
		for i := range sms {
			out[i] = net.filSq(&sms[i])
		}
	}, func() {
		net.filSqBatch(sms, out)
	})
}

// BenchmarkPerturbCNNLoss is BenchmarkPerturbLoss for the CNN body (thesis Table B.6,
// H = 256) over 64 public samples.
func BenchmarkPerturbCNNLoss(b *testing.B) {
	const p, h = benchP, 256
	rng := rand.New(rand.NewPCG(1, 2))
	net := randomPerturbDeep(true, p, h, h, perturbClips[2], nil, rng)
	sms := make([]pnSample, 64)
	for i := range sms {
		sms[i] = randomSample(784, p, 2, nil, rng)
	}
	grad := make([]float64, len(net.phi))
	benchPair(b, net, func() {
		for i := range sms {
			net.loss(&sms[i], grad)
		}
	}, func() {
		net.lossBatch(sms, grad)
	})
}

// benchPair runs the same work as the sub-benchmarks per-sample (the reference, on
// gonum's GEMM), batched-gonum (batched on gonum's GEMM: the session-13 version) and
// batched (on net's products, the packed kernel where the CPU has one).
func benchPair(b *testing.B, net *perturbNet, perSample, batched func()) {
	mm := net.mm
	defer func() { net.mm = mm }()
	run := func(name string, g *models.Dgemm, f func()) {
		net.mm = g
		b.Run(name, func(b *testing.B) {
			for range b.N {
				f()
			}
		})
	}
	run("per-sample", models.NewGonumDgemm(), perSample)
	run("batched-gonum", models.NewGonumDgemm(), batched)
	run("batched", mm, batched)
}
