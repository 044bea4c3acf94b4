package oracle_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/models/oracle"
)

type archCase struct {
	arch  models.Arch
	batch int
	// fdPerTensor is the number of random coordinates per parameter tensor checked by
	// finite differences; 0 checks every parameter.
	fdPerTensor int
}

func allCases(t *testing.T) []archCase {
	t.Helper()
	var cs []archCase
	for _, a := range tinyArchs() {
		cs = append(cs, archCase{arch: a, batch: 3})
	}
	for _, c := range []struct {
		name  string
		batch int
		fd    int
	}{{"linear", 3, 4}, {"mlp", 3, 4}, {"mnist-cnn", 2, 4}, {"mnist-cnn-3x3", 2, 4}, {"cifar-cnn", 2, 1}} {
		a, err := models.ArchByName(c.name)
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, archCase{arch: a, batch: c.batch, fdPerTensor: c.fd})
	}
	return cs
}

// fdIndices picks coordinates to check: every parameter, or perTensor random ones from
// each parameter tensor (so every layer's W and b are covered).
func fdIndices(t *testing.T, a models.Arch, perTensor int, seed uint64) []int {
	t.Helper()
	if perTensor == 0 {
		return nil
	}
	ps, err := a.Params()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 7))
	var idx []int
	for _, p := range ps {
		for k := 0; k < perTensor; k++ {
			idx = append(idx, p.Offset+r.IntN(p.Size))
		}
	}
	return idx
}

func pick(v []float64, idx []int) []float64 {
	if idx == nil {
		return v
	}
	out := make([]float64, len(idx))
	for k, i := range idx {
		out[k] = v[i]
	}
	return out
}

func TestForwardMatchesReference(t *testing.T) {
	for i, c := range allCases(t) {
		t.Run(c.arch.Name, func(t *testing.T) {
			p, x, y := randomProblem(c.arch, c.batch, uint64(100+i))
			gr, err := oracle.Build(c.arch, c.batch)
			if err != nil {
				t.Fatal(err)
			}
			got, err := gr.Forward(p, x, c.batch)
			if err != nil {
				t.Fatal(err)
			}
			want, wantLoss := refLosses(c.arch, p, x, y, c.batch)
			if e := relErr(got, want); e > 1e-12 {
				t.Errorf("logits rel err %.3g", e)
			}
			_, loss, err := gr.BatchGrad(p, x, y)
			if err != nil {
				t.Fatal(err)
			}
			sum := 0.0
			for _, l := range wantLoss {
				sum += l
			}
			if math.Abs(loss-sum) > 1e-12*math.Max(1, math.Abs(sum)) {
				t.Errorf("summed loss %v, reference %v", loss, sum)
			}
		})
	}
}

func TestBatchGradFiniteDifferences(t *testing.T) {
	for i, c := range allCases(t) {
		t.Run(c.arch.Name, func(t *testing.T) {
			p, x, y := randomProblem(c.arch, c.batch, uint64(200+i))
			gr, err := oracle.Build(c.arch, c.batch)
			if err != nil {
				t.Fatal(err)
			}
			g, _, err := gr.BatchGrad(p, x, y)
			if err != nil {
				t.Fatal(err)
			}
			idx := fdIndices(t, c.arch, c.fdPerTensor, uint64(i))
			want := fdGrad(c.arch, p, x, y, c.batch, idx)
			if e := relErr(pick(g, idx), want); e > 1e-6 {
				t.Errorf("gradient vs finite differences: rel err %.3g", e)
			}
			// Directional derivative along a random direction: checks all coordinates.
			r := rand.New(rand.NewPCG(uint64(i), 9))
			v := make([]float64, len(p))
			norm := 0.0
			for k := range v {
				v[k] = r.NormFloat64()
				norm += v[k] * v[k]
			}
			dot := 0.0
			for k := range v {
				v[k] /= math.Sqrt(norm)
				dot += v[k] * g[k]
			}
			const h = 1e-5
			qp, qm := append([]float64(nil), p...), append([]float64(nil), p...)
			for k := range v {
				qp[k] += h * v[k]
				qm[k] -= h * v[k]
			}
			fd := (refSumLoss(c.arch, qp, x, y, c.batch) - refSumLoss(c.arch, qm, x, y, c.batch)) / (2 * h)
			if math.Abs(fd-dot) > 1e-6*math.Max(1, math.Abs(fd)) {
				t.Errorf("directional derivative %v, finite differences %v", dot, fd)
			}
		})
	}
}

func TestPerSampleGrads(t *testing.T) {
	for i, c := range allCases(t) {
		t.Run(c.arch.Name, func(t *testing.T) {
			p, x, y := randomProblem(c.arch, c.batch, uint64(300+i))
			ps, err := oracle.NewPerSample(c.arch)
			if err != nil {
				t.Fatal(err)
			}
			grads, losses, err := ps.Run(p, x, y, c.batch)
			if err != nil {
				t.Fatal(err)
			}
			P, d := c.arch.NumParams(), c.arch.InputDim()
			if len(grads) != c.batch*P || len(losses) != c.batch {
				t.Fatalf("got %d grads and %d losses", len(grads), len(losses))
			}
			_, wantLosses := refLosses(c.arch, p, x, y, c.batch)
			if e := relErr(losses, wantLosses); e > 1e-12 {
				t.Errorf("losses rel err %.3g", e)
			}
			idx := fdIndices(t, c.arch, c.fdPerTensor, uint64(i))
			sum := make([]float64, P)
			for n := 0; n < c.batch; n++ {
				row := grads[n*P : (n+1)*P]
				for k, v := range row {
					sum[k] += v
				}
				if n > 0 && c.fdPerTensor > 0 {
					continue // the big nets: finite differences on the first sample only
				}
				want := fdGrad(c.arch, p, x[n*d:(n+1)*d], y[n:n+1], 1, idx)
				if e := relErr(pick(row, idx), want); e > 1e-6 {
					t.Errorf("sample %d: rel err %.3g vs finite differences", n, e)
				}
			}
			gr, err := oracle.Build(c.arch, c.batch)
			if err != nil {
				t.Fatal(err)
			}
			bg, _, err := gr.BatchGrad(p, x, y)
			if err != nil {
				t.Fatal(err)
			}
			if e := relErr(sum, bg); e > 1e-12 {
				t.Errorf("sum of per-sample grads vs batch grad: rel err %.3g", e)
			}
		})
	}
}

// TestPerSampleReuse checks that the compiled batch-1 graph gives the same answer when
// reused with other parameters and other batches (no state leaks between runs).
func TestPerSampleReuse(t *testing.T) {
	a := tinyArchs()[0]
	ps, err := oracle.NewPerSampleWorkers(a, 3)
	if err != nil {
		t.Fatal(err)
	}
	for seed := uint64(0); seed < 3; seed++ {
		p, x, y := randomProblem(a, 4, seed)
		pc, xc := append([]float64(nil), p...), append([]float64(nil), x...)
		got, _, err := ps.Run(p, x, y, 4)
		if err != nil {
			t.Fatal(err)
		}
		fresh, _, err := oracle.PerSampleGrads(a, p, x, y, 4)
		if err != nil {
			t.Fatal(err)
		}
		if e := relErr(got, fresh); e != 0 {
			t.Errorf("seed %d: reused graph differs from a fresh one by %.3g", seed, e)
		}
		serial, err := oracle.NewPerSampleWorkers(a, 1)
		if err != nil {
			t.Fatal(err)
		}
		one, _, err := serial.Run(p, x, y, 4)
		if err != nil {
			t.Fatal(err)
		}
		if e := relErr(got, one); e != 0 {
			t.Errorf("seed %d: %d workers differ from 1 worker by %.3g", seed, ps.Workers(), e)
		}
		if relErr(p, pc) != 0 || relErr(x, xc) != 0 {
			t.Errorf("seed %d: inputs were modified", seed)
		}
	}
}

// TestPerSampleBatchOne: a batch of one sample on a route with more workers than
// samples equals the batch-1 graph's batch gradient.
func TestPerSampleBatchOne(t *testing.T) {
	for _, a := range tinyArchs() {
		t.Run(a.Name, func(t *testing.T) {
			p, x, y := randomProblem(a, 1, 11)
			ps, err := oracle.NewPerSampleWorkers(a, 3)
			if err != nil {
				t.Fatal(err)
			}
			got, losses, err := ps.Run(p, x, y, 1)
			if err != nil {
				t.Fatal(err)
			}
			gr, err := oracle.Build(a, 1)
			if err != nil {
				t.Fatal(err)
			}
			want, loss, err := gr.BatchGrad(p, x, y)
			if err != nil {
				t.Fatal(err)
			}
			if e := relErr(got, want); e != 0 || losses[0] != loss {
				t.Errorf("gradient differs by %.3g, loss %v vs %v", e, losses[0], loss)
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	a, err := models.ArchByName("mlp")
	if err != nil {
		t.Fatal(err)
	}
	gr, err := oracle.Build(a, 2)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := oracle.NewPerSample(a)
	if err != nil {
		t.Fatal(err)
	}
	p, x, y := randomProblem(a, 2, 1)
	nanX := append([]float64(nil), x...)
	nanX[5] = math.NaN()
	infP := append([]float64(nil), p...)
	infP[0] = math.Inf(1)
	cases := []struct {
		name string
		run  func() error
		want string
	}{
		{"forward wrong batch", func() error { _, err := gr.Forward(p, x, 3); return err }, "batch"},
		{"forward short params", func() error { _, err := gr.Forward(p[1:], x, 2); return err }, "parameters"},
		{"forward short x", func() error { _, err := gr.Forward(p, x[1:], 2); return err }, "x has"},
		{"forward NaN x", func() error { _, err := gr.Forward(p, nanX, 2); return err }, "not finite"},
		{"grad Inf params", func() error { _, _, err := gr.BatchGrad(infP, x, y); return err }, "not finite"},
		{"grad label out of range", func() error { _, _, err := gr.BatchGrad(p, x, []int{0, 10}); return err }, "label"},
		{"grad negative label", func() error { _, _, err := gr.BatchGrad(p, x, []int{-1, 0}); return err }, "label"},
		{"grad nil labels", func() error { _, _, err := gr.BatchGrad(p, x, nil); return err }, "labels"},
		{"grad wrong label count", func() error { _, _, err := gr.BatchGrad(p, x, []int{0}); return err }, "labels"},
		{"per-sample zero batch", func() error { _, _, err := ps.Run(p, x, y, 0); return err }, "batch"},
		{"per-sample short x", func() error { _, _, err := ps.Run(p, x[:10], y, 2); return err }, "x has"},
		{"per-sample NaN x", func() error { _, _, err := ps.Run(p, nanX, y, 2); return err }, "not finite"},
		{"per-sample label count", func() error { _, _, err := ps.Run(p, x, y[:1], 2); return err }, "labels"},
		{"per-sample zero workers", func() error { _, err := oracle.NewPerSampleWorkers(a, 0); return err }, "workers"},
		{"per-sample short params", func() error { _, _, err := ps.Run(p[:5], x, y, 2); return err }, "parameters"},
		{"build zero batch", func() error { _, err := oracle.Build(a, 0); return err }, "batch"},
		{"build bad arch", func() error {
			bad := a
			bad.Classes = 7
			_, err := oracle.Build(bad, 1)
			return err
		}, "logits"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.run()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one mentioning %q", err, c.want)
			}
		})
	}
}
