package attack

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dpfil/dpfil/models"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// Reconstructor maps a released model (its standardised feature vector) to a
// reconstruction of the target in [0,1]^d.
type Reconstructor interface {
	// Predict writes the reconstruction of the feature rows x (n×F, row-major) to out
	// (n×d).
	Predict(x []float64, n int, out []float64)
}

// standardizer maps raw features to zero mean, unit variance per column (columns
// without variance are only centred).
type standardizer struct {
	mean, inv []float64
}

func newStandardizer(x []float64, n, f int) *standardizer {
	s := &standardizer{mean: make([]float64, f), inv: make([]float64, f)}
	for i := 0; i < n; i++ {
		for j, v := range x[i*f : (i+1)*f] {
			s.mean[j] += v / float64(n)
		}
	}
	vr := make([]float64, f)
	for i := 0; i < n; i++ {
		for j, v := range x[i*f : (i+1)*f] {
			d := v - s.mean[j]
			vr[j] += d * d / float64(n)
		}
	}
	for j, v := range vr {
		s.inv[j] = 1
		if v > 1e-24 {
			s.inv[j] = 1 / math.Sqrt(v)
		}
	}
	return s
}

// standardize maps the n feature rows x with s, computing in float64 and rounding
// each value to T.
func standardize[T models.Float](s *standardizer, x []float64, n int) []T {
	f := len(s.mean)
	out := make([]T, n*f)
	for i := 0; i < n; i++ {
		for j, v := range x[i*f : (i+1)*f] {
			out[i*f+j] = T((v - s.mean[j]) * s.inv[j])
		}
	}
	return out
}

// ridgeReconstructor is kernel ridge regression with a linear kernel on standardised
// features: ŷ(x) = ȳ + k(x)ᵀ(K + λI)⁻¹(Y − ȳ), clipped to [0,1].
type ridgeReconstructor struct {
	std   *standardizer
	xs    []float64 // standardised training features (m×F)
	alpha *mat.Dense
	ybar  []float64
	m, f  int
	d     int
	// lambda is the relative penalty used (chosen by leave-one-out when asked).
	lambda float64
}

// fitRidge fits the ridge reconstructor on m feature rows x (m×F) and targets y (m×d).
// lambda is relative to the mean diagonal of K = XXᵀ; lambda = 0 picks it from a log
// grid 1e-4 … 1e4 by exact leave-one-out error (closed form for kernel ridge:
// e_i = [(K+λI)⁻¹(Y−ȳ)]_i / [(K+λI)⁻¹]_ii, from one eigendecomposition of K).
func fitRidge(x []float64, y []float64, m, f, d int, lambda float64) (*ridgeReconstructor, error) {
	if m < 2 {
		return nil, errors.New("ridge reconstructor: need at least 2 training models")
	}
	if !(lambda >= 0) || math.IsInf(lambda, 0) {
		return nil, fmt.Errorf("ridge reconstructor: λ = %v must be ≥ 0 and finite (0 = leave-one-out choice)", lambda)
	}
	r := &ridgeReconstructor{std: newStandardizer(x, m, f), m: m, f: f, d: d, ybar: make([]float64, d)}
	r.xs = standardize[float64](r.std, x, m)
	xm := mat.NewDense(m, f, r.xs)
	k := mat.NewSymDense(m, nil)
	k.SymOuterK(1, xm)
	tr := 0.0
	for i := 0; i < m; i++ {
		tr += k.At(i, i)
	}
	scale := math.Max(tr/float64(m), 1e-12)
	for i := 0; i < m; i++ {
		for j := 0; j < d; j++ {
			r.ybar[j] += y[i*d+j] / float64(m)
		}
	}
	yc := mat.NewDense(m, d, nil)
	for i := 0; i < m; i++ {
		for j := 0; j < d; j++ {
			yc.Set(i, j, y[i*d+j]-r.ybar[j])
		}
	}
	var es mat.EigenSym
	if !es.Factorize(k, true) {
		return nil, errors.New("ridge reconstructor: eigendecomposition of the kernel failed")
	}
	vals := es.Values(nil)
	var v mat.Dense
	es.VectorsTo(&v)
	var vty mat.Dense
	vty.Mul(v.T(), yc) // m×d
	solve := func(reg float64) *mat.Dense {
		s := mat.DenseCopyOf(&vty)
		for i := 0; i < m; i++ {
			row := s.RawRowView(i)
			inv := 1 / (math.Max(vals[i], 0) + reg)
			for j := range row {
				row[j] *= inv
			}
		}
		var a mat.Dense
		a.Mul(&v, s)
		return &a
	}
	if lambda == 0 {
		best := math.Inf(1)
		for e := -4.0; e <= 4; e += 0.5 {
			reg := math.Pow(10, e) * scale
			a := solve(reg)
			loo := 0.0
			for i := 0; i < m; i++ {
				hii := 0.0 // [(K+λI)⁻¹]_ii
				for q := 0; q < m; q++ {
					hii += v.At(i, q) * v.At(i, q) / (math.Max(vals[q], 0) + reg)
				}
				for j := 0; j < d; j++ {
					ei := a.At(i, j) / hii
					loo += ei * ei
				}
			}
			if loo < best {
				best, lambda = loo, math.Pow(10, e)
			}
		}
	}
	r.lambda = lambda
	r.alpha = solve(lambda * scale)
	return r, nil
}

func (r *ridgeReconstructor) Predict(x []float64, n int, out []float64) {
	xs := standardize[float64](r.std, x, n)
	var kx mat.Dense
	kx.Mul(mat.NewDense(n, r.f, xs), mat.NewDense(r.m, r.f, r.xs).T())
	var o mat.Dense
	o.Mul(&kx, r.alpha)
	for i := 0; i < n; i++ {
		for j := 0; j < r.d; j++ {
			out[i*r.d+j] = math.Min(1, math.Max(0, o.At(i, j)+r.ybar[j]))
		}
	}
}

// mlpReconstructor is the reconstructor network of Balle et al. (2022): standardised
// features → Dense(H) → ReLU → Dense(d) → sigmoid, trained on the squared error with
// Adam on mini-batches.
//
// The first layer's two GEMMs (F×H per row: nearly all the work, F being the released
// model's parameter count) run in float32 on the engine's CPU backend from w1f, the
// float32 copy of w1; parameters, Adam moments and the rest stay float64.
type mlpReconstructor struct {
	std    *standardizer
	f, h   int
	d      int
	w1, b1 []float64 // H×F, H
	w2, b2 []float64 // d×H, d
	w1f    []float32
	be     models.Backend[float32]
}

// snapshot returns a copy of the network's parameters; restore sets them back.
func (r *mlpReconstructor) snapshot() [][]float64 {
	return [][]float64{append([]float64(nil), r.w1...), append([]float64(nil), r.b1...), append([]float64(nil), r.w2...), append([]float64(nil), r.b2...)}
}

func (r *mlpReconstructor) restore(s [][]float64) {
	copy(r.w1, s[0])
	copy(r.b1, s[1])
	copy(r.w2, s[2])
	copy(r.b2, s[3])
	for i, v := range r.w1 {
		r.w1f[i] = float32(v)
	}
}

// MLPOptions are the reconstructor network's training settings.
type MLPOptions struct {
	Hidden int     // hidden width H (default 256)
	Epochs int     // passes over the shadow models (default 100)
	Batch  int     // mini-batch (default 32)
	LR     float64 // Adam step size (default 1e-3)
	Decay  float64 // L2 weight decay (default 0)
	// BestEpoch keeps the weights of the epoch with the lowest held-out shadow MSE
	// (early stopping; the held-out shadows then select the network, and only the
	// targets measure it without bias).
	BestEpoch bool
}

func (o *MLPOptions) defaults() {
	if o.Hidden == 0 {
		o.Hidden = 256
	}
	if o.Epochs == 0 {
		o.Epochs = 100
	}
	if o.Batch == 0 {
		o.Batch = 32
	}
	if o.LR == 0 {
		o.LR = 1e-3
	}
}

func (o MLPOptions) validate() error {
	if o.Hidden < 1 || o.Epochs < 1 || o.Batch < 1 || !(o.LR > 0) || math.IsInf(o.LR, 0) || !(o.Decay >= 0) || math.IsInf(o.Decay, 0) {
		return fmt.Errorf("reconstructor network: hidden %d, epochs %d, batch %d must be ≥ 1, lr %v > 0, decay %v ≥ 0", o.Hidden, o.Epochs, o.Batch, o.LR, o.Decay)
	}
	return nil
}

// gemm computes c = alpha·op(a)·op(b) + beta·c with row-major dense slices.
func gemm(ta, tb bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	t := func(x bool) blas.Transpose {
		if x {
			return blas.Trans
		}
		return blas.NoTrans
	}
	ar, ac := m, k
	if ta {
		ar, ac = k, m
	}
	br, bc := k, n
	if tb {
		br, bc = n, k
	}
	blas64.Gemm(t(ta), t(tb), alpha,
		blas64.General{Rows: ar, Cols: ac, Stride: lda, Data: a},
		blas64.General{Rows: br, Cols: bc, Stride: ldb, Data: b},
		beta, blas64.General{Rows: m, Cols: n, Stride: ldc, Data: c})
}

// fitMLP trains the reconstructor network on m rows; progress (optional) receives the
// network after every epoch (to evaluate it), the
// epoch and its mean training loss per pixel.
func fitMLP(x, y []float64, m, f, d int, opt MLPOptions, seed uint64, progress func(epoch int, loss float64, r *mlpReconstructor)) (*mlpReconstructor, error) {
	opt.defaults()
	if err := opt.validate(); err != nil {
		return nil, err
	}
	if m < 1 {
		return nil, errors.New("reconstructor network: no training models")
	}
	h := opt.Hidden
	r := &mlpReconstructor{std: newStandardizer(x, m, f), f: f, h: h, d: d,
		w1: make([]float64, h*f), b1: make([]float64, h), w2: make([]float64, d*h), b2: make([]float64, d),
		w1f: make([]float32, h*f), be: models.NewCPUBackend[float32]()}
	xs := standardize[float32](r.std, x, m)
	rng := rand.New(rand.NewPCG(seed, seed^0x726563)) // "rec"
	s1 := math.Sqrt(2 / float64(f))
	for i := range r.w1 {
		r.w1[i] = s1 * rng.NormFloat64()
		r.w1f[i] = float32(r.w1[i])
	}
	// Output weights zero and output bias at the logit of the mean target: the network
	// starts at the mean image (the label-free baseline) and learns departures from it.
	for j := 0; j < d; j++ {
		mu := 0.0
		for i := 0; i < m; i++ {
			mu += y[i*d+j] / float64(m)
		}
		mu = math.Min(1-1e-3, math.Max(1e-3, mu))
		r.b2[j] = math.Log(mu / (1 - mu))
	}
	params := [][]float64{r.w1, r.b1, r.w2, r.b2}
	grads := make([][]float64, 4)
	m1 := make([][]float64, 4)
	m2 := make([][]float64, 4)
	for k, p := range params {
		grads[k] = make([]float64, len(p))
		m1[k] = make([]float64, len(p))
		m2[k] = make([]float64, len(p))
	}
	const b1c, b2c, eps = 0.9, 0.999, 1e-8
	bs := min(opt.Batch, m)
	xb := make([]float32, bs*f)
	dhid32 := make([]float32, bs*h)
	g32 := make([]float32, h*f)
	hid := make([]float64, bs*h)
	outp := make([]float64, bs*d)
	dout := make([]float64, bs*d)
	dhid := make([]float64, bs*h)
	step := 0
	order := make([]int, m)
	for i := range order {
		order[i] = i
	}
	for ep := 0; ep < opt.Epochs; ep++ {
		rng.Shuffle(m, func(a, b int) { order[a], order[b] = order[b], order[a] })
		epLoss := 0.0
		for s0 := 0; s0 < m; s0 += bs {
			n := min(bs, m-s0)
			for i := 0; i < n; i++ {
				copy(xb[i*f:(i+1)*f], xs[order[s0+i]*f:(order[s0+i]+1)*f])
			}
			// Forward.
			r.forward(xb[:n*f], n, hid[:n*h], outp[:n*d])
			// Loss ½‖σ(z) − y‖²/d per sample, mean over the batch; dL/dz = (p − y)p(1 − p)/(n·d).
			for i := 0; i < n; i++ {
				yi := y[order[s0+i]*d : (order[s0+i]+1)*d]
				for j := 0; j < d; j++ {
					p := outp[i*d+j]
					e := p - yi[j]
					epLoss += e * e / float64(d)
					dout[i*d+j] = e * p * (1 - p) / float64(n*d)
				}
			}
			// Backward.
			gemm(true, false, d, h, n, 1, dout, d, hid, h, 0, grads[2], h)
			clear(grads[3])
			for i := 0; i < n; i++ {
				axpyF(1, dout[i*d:(i+1)*d], grads[3])
			}
			gemm(false, false, n, h, d, 1, dout, d, r.w2, h, 0, dhid, h)
			for i := range dhid[:n*h] {
				if hid[i] <= 0 {
					dhid[i] = 0
				}
			}
			for i, v := range dhid[:n*h] {
				dhid32[i] = float32(v)
			}
			r.be.Gemm(true, false, h, f, n, 1, dhid32, h, xb, f, 0, g32, f)
			for i, v := range g32 {
				grads[0][i] = float64(v)
			}
			clear(grads[1])
			for i := 0; i < n; i++ {
				axpyF(1, dhid[i*h:(i+1)*h], grads[1])
			}
			// Adam.
			step++
			c1 := 1 - math.Pow(b1c, float64(step))
			c2 := 1 - math.Pow(b2c, float64(step))
			for k, p := range params {
				g, a, b := grads[k], m1[k], m2[k]
				for i := range p {
					gi := g[i]
					if k%2 == 0 && opt.Decay > 0 {
						gi += opt.Decay * p[i]
					}
					a[i] = b1c*a[i] + (1-b1c)*gi
					b[i] = b2c*b[i] + (1-b2c)*gi*gi
					p[i] -= opt.LR * (a[i] / c1) / (math.Sqrt(b[i]/c2) + eps)
				}
				if k == 0 {
					for i, v := range p {
						r.w1f[i] = float32(v)
					}
				}
			}
		}
		if math.IsNaN(epLoss) || math.IsInf(epLoss, 0) {
			return nil, fmt.Errorf("reconstructor network diverged in epoch %d (lower its learning rate)", ep+1)
		}
		if progress != nil {
			progress(ep+1, epLoss/float64(m), r)
		}
	}
	return r, nil
}

// forward computes the hidden ReLU activations and the sigmoid outputs of n
// standardised rows.
func (r *mlpReconstructor) forward(xs []float32, n int, hid, out []float64) {
	f, h, d := r.f, r.h, r.d
	h32 := make([]float32, n*h)
	r.be.Gemm(false, true, n, h, f, 1, xs, f, r.w1f, f, 0, h32, h)
	for i, v := range h32 {
		hid[i] = float64(v)
	}
	for i := 0; i < n; i++ {
		row := hid[i*h : (i+1)*h]
		for j := range row {
			row[j] = math.Max(0, row[j]+r.b1[j])
		}
	}
	gemm(false, true, n, d, h, 1, hid, h, r.w2, h, 0, out, d)
	for i := 0; i < n; i++ {
		row := out[i*d : (i+1)*d]
		for j := range row {
			z := row[j] + r.b2[j]
			if z >= 0 {
				row[j] = 1 / (1 + math.Exp(-z))
			} else {
				e := math.Exp(z)
				row[j] = e / (1 + e)
			}
		}
	}
}

func (r *mlpReconstructor) Predict(x []float64, n int, out []float64) {
	xs := standardize[float32](r.std, x, n)
	hid := make([]float64, n*r.h)
	r.forward(xs, n, hid, out)
}

func axpyF(alpha float64, x, y []float64) {
	for i, v := range x {
		y[i] += alpha * v
	}
}
