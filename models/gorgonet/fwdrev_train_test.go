package gorgonet

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/train"
)

// tinySplit is an in-memory dataset of n training and 3 test 1×6×6 images in
// [0, 1] with labels in [0, testK).
func tinySplit(n int, seed uint64) *data.Split {
	rng := rand.New(rand.NewPCG(seed, 1))
	mk := func(name string, n int) *data.Dataset {
		ds := &data.Dataset{Name: "tiny", Source: "test", N: n, C: 1, H: 6, W: 6, Classes: testK,
			Images: make([]float32, n*36), Labels: make([]int, n)}
		for i := range ds.Images {
			ds.Images[i] = rng.Float32()
		}
		for i := range ds.Labels {
			ds.Labels[i] = i % testK
		}
		return ds
	}
	return &data.Split{Train: mk("train", n), Test: mk("test", 3)}
}

// TestTrainRunDFILEqualsFiniteDifferences is the acceptance check: train.Run
// with a FromGraph model (sigmoid, a residual connection and max-pool) and exact FIL
// reports per-sample dFIL equal to κ·‖J‖_F²/((σC)²·d), with J the float64 central
// finite-difference Jacobian of the sample's clipped gradient — computed through
// Gorgonia's own first-order tape, independent of the tangent rules — at the
// parameters of the (single, q = 1) step, for hard and smooth clipping.
func TestTrainRunDFILEqualsFiniteDifferences(t *testing.T) {
	const n = 5
	split := tinySplit(n, 9)
	for _, mode := range []string{"hard", "smooth"} {
		t.Run(mode, func(t *testing.T) {
			oc := opCase{name: "res-sig-maxpool", xs: []int{1, 1, 6, 6}, body: residualBody}
			spec := oc.spec(t)
			rng := rand.New(rand.NewPCG(2, 3))
			for _, pn := range spec.Params { // InitValues: the step's parameters are known
				v := make([]float64, pn.Shape().TotalSize())
				for i := range v {
					v[i] = float64(float32(0.5 * rng.NormFloat64()))
				}
				if err := G.Let(pn, tensor.New(tensor.WithShape(pn.Shape()...), tensor.WithBacking(v))); err != nil {
					t.Fatal(err)
				}
			}
			spec.Init = InitValues
			m, err := FromGraph(spec)
			if err != nil {
				t.Fatal(err)
			}
			cfg := train.DefaultConfig().WithModel(m)
			cfg.Dataset, cfg.Steps, cfg.Batch, cfg.Sampling = "tiny", 1, n, train.SamplingPoisson
			cfg.Sigma, cfg.Clip, cfg.ClipMode, cfg.FILExact, cfg.FILCoords = 1.3, 0.05, mode, true, 0
			res, err := train.Run(context.Background(), cfg, train.Options{Model: m, Data: split})
			if err != nil {
				t.Fatal(err)
			}
			if !res.FIL || len(res.DFIL) != n || res.Kappa != 1 {
				t.Fatalf("result: fil %v, %d dFIL values, κ = %v", res.FIL, len(res.DFIL), res.Kappa)
			}
			clip := models.Clip{Mode: models.ClipSmooth, C: cfg.Clip}
			if mode == "hard" {
				clip.Mode = models.ClipHard
			}
			p := m.Init64(0)
			D := m.InputDim()
			m.gorgoniaRoute = true
			defer func() { m.gorgoniaRoute = false }()
			clipped := func(x []float64, y int) []float64 {
				g, l := make([]float64, m.NumParams()), make([]float64, 1)
				if err := m.ClippedGradSum64(p, x, []int{y}, clip, g, l); err != nil {
					t.Fatal(err)
				}
				return g
			}
			for s := 0; s < n; s++ {
				x := make([]float64, D)
				for i, v := range split.Train.Image(s) {
					x[i] = float64(v)
				}
				y := split.Train.Labels[s]
				if _, g := unclipped(t, m, p, x, y, true); !(norm2(g) > 2*cfg.Clip) {
					t.Fatalf("sample %d: ‖g‖ = %v, the clipping is not active at C = %v", s, norm2(g), cfg.Clip)
				}
				m.gorgoniaRoute = true
				var fro float64
				for j := 0; j < D; j++ {
					const h = 1e-5
					x0 := x[j]
					x[j] = x0 + h
					gp := clipped(x, y)
					x[j] = x0 - h
					gm := clipped(x, y)
					x[j] = x0
					for i := range gp {
						d := (gp[i] - gm[i]) / (2 * h)
						fro += d * d
					}
				}
				want := res.Kappa * fro / (cfg.Sigma * cfg.Clip * cfg.Sigma * cfg.Clip) / float64(D)
				if e := math.Abs(res.DFIL[s]-want) / want; !(e < 1e-6) {
					t.Errorf("sample %d: dFIL %v, finite differences %v (rel. error %.3g)", s, res.DFIL[s], want, e)
				}
			}
		})
	}
}

// TestTrainRunEtaNeedsEngine: η (fil_eta) needs the engine network's extra passes; a
// graph model with FIL refuses it before training with a clear error, not a panic.
func TestTrainRunEtaNeedsEngine(t *testing.T) {
	m, err := FromGraph(opCase{name: "res", xs: []int{1, 1, 6, 6}, body: residualBody}.spec(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg := train.DefaultConfig().WithModel(m)
	cfg.Dataset, cfg.Steps, cfg.Batch, cfg.FILCoords, cfg.FILEta = "tiny", 1, 5, 3, 5
	_, err = train.Run(context.Background(), cfg, train.Options{Model: m, Data: tinySplit(5, 1)})
	if err == nil || !strings.Contains(err.Error(), "fil_eta") {
		t.Fatalf("err = %v", err)
	}
}
