package gorgonet

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpfil/dpfil/models"
)

// TestGraphFILEqualsEngine: every built-in architecture (and a ReLU net and a one-logit net), built as a
// one-sample Gorgonia graph from the layer kinds' nodes (ArchGraph) and run by the
// graph's own forward-over-reverse, gives the engine's float64 FILSqNorms to 1e-10
// (hard clipping active and smooth clipping), and its clipped gradient sum (mapped
// back to the engine's layout), losses and logits.
func TestGraphFILEqualsEngine(t *testing.T) {
	archs := []models.Arch{}
	for _, name := range models.ArchNames() {
		a, err := models.ArchByName(name)
		if err != nil {
			t.Fatal(err)
		}
		archs = append(archs, a)
	}
	archs = append(archs, models.Arch{Name: "relu-cnn", Input: models.Shape{C: 2, H: 7, W: 7}, Classes: 4, Layers: []models.LayerSpec{
		models.ConvSame(3, 3, 2, 7, 7), {Kind: models.KindReLU}, models.AvgPool(2, 1), {Kind: models.KindFlatten}, models.Dense(5), {Kind: models.KindELU}, models.Dense(4)}})
	archs = append(archs, models.Arch{Name: "one-logit", Input: models.Shape{C: 1, H: 5, W: 5}, Classes: 2, Layers: []models.LayerSpec{
		{Kind: models.KindFlatten}, models.Dense(3), {Kind: models.KindTanh}, models.Dense(1), {Kind: models.KindZeroLogit}}})
	for _, arch := range archs {
		t.Run(arch.Name, func(t *testing.T) {
			net, err := models.NewNetwork(arch, models.NewCPUBackend[float64]())
			if err != nil {
				t.Fatal(err)
			}
			spec, toGraph, err := ArchGraph(arch)
			if err != nil {
				t.Fatal(err)
			}
			m, err := FromGraph(spec)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.SecondOrderErr(); err != nil {
				t.Fatal(err)
			}
			const n = 2
			p, x, y := RandomPoint(arch, n, 5)
			gp := toGraph(p)
			D := arch.InputDim()
			rng := rand.New(rand.NewPCG(3, 4))
			coords := make([][]int, n)
			for s := range coords {
				for j := 0; j < 3; j++ {
					coords[s] = append(coords[s], rng.IntN(D))
				}
			}
			norms, _, err := net.PerSampleGrads(p, x, y, n)
			if err != nil {
				t.Fatal(err)
			}
			gn := norm2(norms[:net.NumParams()])
			for _, c := range []models.Clip{{Mode: models.ClipHard, C: 0.5 * gn}, {Mode: models.ClipSmooth, C: gn}} {
				want, got := make([]float64, n), make([]float64, n)
				if err := net.FILSqNorms(p, x, y, n, c, coords, want); err != nil {
					t.Fatal(err)
				}
				if err := m.FILSqNorms64(gp, x, y, c, coords, got); err != nil {
					t.Fatal(err)
				}
				for s := range want {
					if e := math.Abs(got[s]-want[s]) / want[s]; !(e < 1e-10) || !(want[s] > 0) {
						t.Errorf("clip %+v sample %d: graph FIL %v, engine %v (rel. error %.3g)", c, s, got[s], want[s], e)
					}
				}
				es, el := make([]float64, len(p)), make([]float64, n)
				if err := net.ClippedGradSum(p, x, y, n, c, es, el); err != nil {
					t.Fatal(err)
				}
				gs, gl := make([]float64, len(p)), make([]float64, n)
				if err := m.ClippedGradSum64(gp, x, y, c, gs, gl); err != nil {
					t.Fatal(err)
				}
				if e := maxRelErr(gs, toGraph(es)); !(e < 1e-10) {
					t.Errorf("clip %+v: clipped gradient sum rel. error %.3g", c, e)
				}
				if e := maxRelErr(gl, el); !(e < 1e-12) {
					t.Errorf("clip %+v: losses rel. error %.3g", c, e)
				}
			}
			z := make([]float64, n*arch.Classes)
			if err := m.Logits64(gp, x, n, z); err != nil {
				t.Fatal(err)
			}
			ez, err := net.Forward(p, x, n)
			if err != nil {
				t.Fatal(err)
			}
			if e := maxRelErr(z, ez); !(e < 1e-12) {
				t.Errorf("logits rel. error %.3g", e)
			}
		})
	}
}
