package train

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/models"
)

// softmaxModel is a hand-coded models.Model for tests, independent of the engine:
// K-class linear softmax regression on d inputs, params W[K][d] then b[K], with
// analytic per-sample gradients in float64, its own hard/smooth clipping, and the
// Jacobian of the clipped gradient w.r.t. the input by central finite differences.
type softmaxModel struct {
	d, k int
	// recorded FILSqNorms calls (when record is set)
	record  bool
	filCall []filCall
}

type filCall struct {
	params []float32
	y      []int
	coords [][]int
	out    []float64
}

func (m *softmaxModel) Arch() models.Arch {
	return models.Arch{Name: "softmax-test", Input: models.Shape{C: 1, H: 1, W: m.d}, Classes: m.k,
		Layers: []models.LayerSpec{{Kind: models.KindFlatten}, models.Dense(m.k)}}
}
func (m *softmaxModel) NumParams() int { return m.k*m.d + m.k }
func (m *softmaxModel) InputDim() int  { return m.d }

func (m *softmaxModel) Init(seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 7))
	p := make([]float32, m.NumParams())
	for i := range p {
		p[i] = float32(0.3 * r.NormFloat64())
	}
	return p
}

func (m *softmaxModel) logits(params []float32, x []float64) []float64 {
	z := make([]float64, m.k)
	for c := 0; c < m.k; c++ {
		z[c] = float64(params[m.k*m.d+c])
		for j := 0; j < m.d; j++ {
			z[c] += float64(params[c*m.d+j]) * x[j]
		}
	}
	return z
}

func (m *softmaxModel) Logits(params, x []float32, n int, out []float32) error {
	for i := 0; i < n; i++ {
		xi := make([]float64, m.d)
		for j := range xi {
			xi[j] = float64(x[i*m.d+j])
		}
		for c, v := range m.logits(params, xi) {
			out[i*m.k+c] = float32(v)
		}
	}
	return nil
}

// grad is the analytic per-sample gradient (p − e_y)·[x; 1] and the loss.
func (m *softmaxModel) grad(params []float32, x []float64, y int) ([]float64, float64) {
	z := m.logits(params, x)
	mx := math.Inf(-1)
	for _, v := range z {
		mx = math.Max(mx, v)
	}
	s := 0.0
	for _, v := range z {
		s += math.Exp(v - mx)
	}
	g := make([]float64, m.NumParams())
	for c := 0; c < m.k; c++ {
		pc := math.Exp(z[c]-mx) / s
		if c == y {
			pc--
		}
		for j := 0; j < m.d; j++ {
			g[c*m.d+j] = pc * x[j]
		}
		g[m.k*m.d+c] = pc
	}
	return g, mx + math.Log(s) - z[y]
}

func geluExact(t float64) float64 { return t * 0.5 * (1 + math.Erf(t/math.Sqrt2)) }

// clipScale is the factor of hard or smooth clipping for a gradient of norm n.
func clipScale(clip models.Clip, n float64) float64 {
	if clip.Mode == models.ClipHard {
		return 1 / math.Max(1, n/clip.C)
	}
	return 1 / (geluExact(n/clip.C-1) + 1)
}

func (m *softmaxModel) clipped(params []float32, x []float64, y int, clip models.Clip) ([]float64, float64) {
	g, loss := m.grad(params, x, y)
	n := 0.0
	for _, v := range g {
		n += v * v
	}
	s := clipScale(clip, math.Sqrt(n))
	for i := range g {
		g[i] *= s
	}
	return g, loss
}

func (m *softmaxModel) sample(x []float32, i int) []float64 {
	xi := make([]float64, m.d)
	for j := range xi {
		xi[j] = float64(x[i*m.d+j])
	}
	return xi
}

func (m *softmaxModel) ClippedGradSum(params, x []float32, y []int, clip models.Clip, sum []float32, losses []float64) error {
	acc := make([]float64, m.NumParams())
	for i := range y {
		g, l := m.clipped(params, m.sample(x, i), y[i], clip)
		for j, v := range g {
			acc[j] += v
		}
		losses[i] = l
	}
	for j, v := range acc {
		sum[j] = float32(v)
	}
	return nil
}

func (m *softmaxModel) FILSqNorms(params, x []float32, y []int, clip models.Clip, coords [][]int, out []float64) error {
	if len(coords) != len(y) {
		return fmt.Errorf("%d coordinate lists for %d samples", len(coords), len(y))
	}
	const h = 1e-5
	for i := range y {
		xi := m.sample(x, i)
		out[i] = 0
		for _, c := range coords[i] {
			if c < 0 || c >= m.d {
				return fmt.Errorf("coordinate %d out of range", c)
			}
			xp := append([]float64(nil), xi...)
			xm := append([]float64(nil), xi...)
			xp[c] += h
			xm[c] -= h
			gp, _ := m.clipped(params, xp, y[i], clip)
			gm, _ := m.clipped(params, xm, y[i], clip)
			for j := range gp {
				dj := (gp[j] - gm[j]) / (2 * h)
				out[i] += dj * dj
			}
		}
	}
	if m.record {
		fc := filCall{params: append([]float32(nil), params...), y: append([]int(nil), y...), out: append([]float64(nil), out[:len(y)]...)}
		for _, c := range coords {
			fc.coords = append(fc.coords, append([]int(nil), c...))
		}
		m.filCall = append(m.filCall, fc)
	}
	return nil
}

// toyData returns a separable-ish random dataset with n training and nt test samples
// of dimension d and k classes, values in [0,1].
func toyData(n, nt, d, k int, seed uint64) *data.Split {
	r := rand.New(rand.NewPCG(seed, 99))
	mk := func(n int, name string) *data.Dataset {
		ds := &data.Dataset{Name: name, Source: "test", N: n, C: 1, H: 1, W: d, Classes: k,
			Images: make([]float32, n*d), Labels: make([]int, n)}
		for i := 0; i < n; i++ {
			y := i % k
			ds.Labels[i] = y
			for j := 0; j < d; j++ {
				v := 0.5 + 0.25*r.NormFloat64()
				if j%k == y {
					v += 0.3
				}
				ds.Images[i*d+j] = float32(math.Min(1, math.Max(0, v)))
			}
		}
		ds.SHA256 = ds.Fingerprint()
		return ds
	}
	return &data.Split{Train: mk(n, "toy"), Test: mk(nt, "toy-test")}
}

// imageToyData is toyData shaped like MNIST (1×28×28) for the engine's models.
func imageToyData(n, nt int, seed uint64) *data.Split {
	s := toyData(n, nt, 784, 10, seed)
	for _, ds := range []*data.Dataset{s.Train, s.Test} {
		ds.H, ds.W = 28, 28
		ds.SHA256 = ds.Fingerprint()
	}
	return s
}
