package train

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/models"
)

// deepBodies are the two-Dense-layer bodies of g_φ the tests run: the CNN of Table
// B.6 and the MLP of Table B.5, each with two different Dense widths so that a
// mixed-up width shows.
var deepBodies = []struct {
	name  string
	conv  bool
	h, h2 int
}{
	{"cnn", true, 3, 2},
	{"mlp2", false, 4, 3},
}

// randomPerturbDeep returns a two-Dense-layer g_φ (d = 784; the conv body when conv)
// with every parameter random (output layer included, zero on frozen rows) and
// random standardisation constants.
func randomPerturbDeep(conv bool, p, h, h2 int, clip models.Clip, mask []bool, rng *rand.Rand) *perturbNet {
	n := newPerturbDeep(784, p, h, h2, conv, 3.7, 2, clip, mask, 0.01, rng)
	o := n.deepOff
	for _, b := range []int{1, 3, 5, 7, 8, 9} { // biases and the output layer
		for i := o[b]; i < o[b+1]; i++ {
			n.phi[i] = 0.4 * rng.NormFloat64()
		}
	}
	maskAndStandardise(n, p, h2, mask, rng)
	return n
}

var cnnBlockNames = []string{"conv1 kernel", "conv1 bias", "conv2 kernel", "conv2 bias", "dense1 weight", "dense1 bias", "dense2 weight", "dense2 bias", "output weight", "output bias"}

// The hand-derived gradient of eq. 2.9's per-sample loss w.r.t. the parameters of
// the CNN and MLP2 bodies equals float64 central finite differences in every
// parameter block (both convs' kernels and biases for the CNN, both Dense layers, the
// output layer: all entries of the small blocks, 40 random entries of the large
// ones), for each clip, with and without a frozen-coordinate mask, with dense and
// one-hot probes.
func TestPerturbCNNLossGradientMatchesFiniteDifferences(t *testing.T) {
	for _, body := range deepBodies {
		t.Run(body.name, func(t *testing.T) { checkDeepLossGradient(t, body.conv, body.h, body.h2) })
	}
}

func checkDeepLossGradient(t *testing.T, conv bool, h, h2 int) {
	const p = 5
	cases := []struct {
		clip           models.Clip
		masked, sparse bool
	}{
		{perturbClips[0], false, false},
		{perturbClips[1], true, false},
		{perturbClips[2], false, true},
		{perturbClips[0], true, true},
	}
	for ci, c := range cases {
		rng := rand.New(rand.NewPCG(uint64(ci), 17))
		var mask []bool
		if c.masked {
			mask = []bool{true, false, true, true, false}
		}
		n := randomPerturbDeep(conv, p, h, h2, c.clip, mask, rng)
		sm := randomSample(784, p, 2, mask, rng)
		if c.sparse {
			sm.u, sm.uIdx = nil, []int{300, 431}
		}
		grad := make([]float64, len(n.phi))
		L := n.loss(&sm, grad)
		// The FIL term must be on and of the same order as ‖δ‖², or the test would not
		// check the reverse pass through the tangents.
		var f cnnFwd
		n.cnnForward(&sm, &f, true)
		dd := 0.0
		for _, v := range f.head.delta {
			dd += v * v
		}
		if !(L > 0) || !(L-dd > 0.05*L) {
			t.Fatalf("case %d: loss %v, ‖δ‖² %v: the FIL term does not contribute", ci, L, dd)
		}
		o := n.deepOff
		if conv {
			for b := 0; b+1 < len(o); b++ {
				if o[b+1] == o[b] {
					t.Fatalf("case %d: %s is empty in the CNN body", ci, cnnBlockNames[b])
				}
			}
		}
		checkBlockGradients(t, fmt.Sprintf("case %d (%+v)", ci, c), n, &sm, grad, o, cnnBlockNames, 40, 1e-5, rng)
	}
}

// The input tangent of the CNN and MLP2 bodies, ẇ_k = ġ_k + ∂g_φ/∂z·u_k +
// ∂g_φ/∂g·ġ_k, and the clipped tangent v̇_k equal central finite differences of
// w(z) = g(z) + g_φ(z, g(z)) and of CLIP(w(z)) along u_k, with g(z) = g₀ + M·z (so
// ġ_k = M·u_k), for dense and one-hot probes; filSq is Σ_k ‖v̇_k‖².
func TestPerturbCNNTangentMatchesFiniteDifferences(t *testing.T) {
	for _, body := range deepBodies {
		t.Run(body.name, func(t *testing.T) { checkDeepTangent(t, body.conv, body.h+1, body.h2+1) })
	}
}

func checkDeepTangent(t *testing.T, conv bool, h, h2 int) {
	const p, d = 5, 784
	clip := models.Clip{Mode: models.ClipSmooth, C: 0.7, GELU: models.GELUExact}
	rng := rand.New(rand.NewPCG(3, 4))
	n := randomPerturbDeep(conv, p, h, h2, clip, nil, rng)
	M := make([]float64, p*d)
	for i := range M {
		M[i] = 0.05 * rng.NormFloat64()
	}
	g0 := make([]float64, p)
	for i := range g0 {
		g0[i] = 0.5 * rng.NormFloat64()
	}
	gOf := func(x []float64) []float64 {
		g := append([]float64(nil), g0...)
		for i := range g {
			for j, v := range x {
				g[i] += M[i*d+j] * v
			}
		}
		return g
	}
	x := make([]float64, d)
	for i := range x {
		x[i] = rng.Float64()
	}
	wAndClip := func(x []float64) (w, v []float64) {
		sm := pnSample{x: x, g: gOf(x)}
		delta := make([]float64, p)
		n.perturb(&sm, delta)
		w, v = make([]float64, p), make([]float64, p)
		ss := 0.0
		for i := range w {
			w[i] = sm.g[i] + delta[i]
			ss += w[i] * w[i]
		}
		s, _ := clip.Scale(math.Sqrt(ss))
		for i := range w {
			v[i] = s * w[i]
		}
		return w, v
	}
	for _, sparse := range []bool{false, true} {
		sm := pnSample{x: x, g: gOf(x)}
		var us [][]float64
		if sparse {
			sm.uIdx = []int{0, 29, 406, 783}
			for _, j := range sm.uIdx {
				u := make([]float64, d)
				u[j] = 1
				us = append(us, u)
			}
		} else {
			for k := 0; k < 2; k++ {
				u := make([]float64, d)
				for i := range u {
					u[i] = rng.NormFloat64()
				}
				us = append(us, u)
			}
			sm.u = us
		}
		for _, u := range us {
			gd := make([]float64, p)
			for i := range gd {
				for j, v := range u {
					gd[i] += M[i*d+j] * v
				}
			}
			sm.gdots = append(sm.gdots, gd)
		}
		var f cnnFwd
		n.cnnForward(&sm, &f, true)
		fil := 0.0
		for k, u := range us {
			const eps = 1e-5
			xp, xm := make([]float64, d), make([]float64, d)
			for i := range x {
				xp[i], xm[i] = x[i]+eps*u[i], x[i]-eps*u[i]
			}
			wp, vp := wAndClip(xp)
			wm, vm := wAndClip(xm)
			moved := 0.0
			for i := 0; i < p; i++ {
				fdw, fdv := (wp[i]-wm[i])/(2*eps), (vp[i]-vm[i])/(2*eps)
				if math.Abs(fdw-f.wd[k][i]) > 1e-6*(1+math.Abs(fdw)) || math.Abs(fdv-f.vd[k][i]) > 1e-6*(1+math.Abs(fdv)) {
					t.Fatalf("sparse %v probe %d coordinate %d: ẇ %v v̇ %v, finite differences %v %v", sparse, k, i, f.wd[k][i], f.vd[k][i], fdw, fdv)
				}
				moved += math.Abs(f.wd[k][i] - sm.gdots[k][i])
				fil += fdv * fdv
			}
			if moved < 1e-4 {
				t.Fatalf("sparse %v probe %d: ∂g_φ/∂z·u is zero (%v); the test checks nothing through the body", sparse, k, moved)
			}
		}
		if got := n.filSq(&sm); math.Abs(got-fil) > 1e-5*fil {
			t.Fatalf("sparse %v: filSq %v, finite differences %v", sparse, got, fil)
		}
	}
}

// The conv helpers against a direct evaluation of the convolution's definition, and
// bwdIn/bwdW as its transposes: ⟨conv(W, x), y⟩ = ⟨x, convᵀ(W, y)⟩ = ⟨W, ∂_W⟩.
func TestPerturbConvHelpers(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range []convSpec{cnnConv1, cnnConv2} {
		W, x, y := make([]float64, c.wLen()), make([]float64, c.inLen()), make([]float64, c.outLen())
		for _, v := range [][]float64{W, x, y} {
			for i := range v {
				v[i] = rng.NormFloat64()
			}
		}
		out := make([]float64, c.outLen())
		c.fwd(models.NewDgemm(1), W, x, out)
		for o := 0; o < c.cout; o++ {
			for i := 0; i < c.ho; i++ {
				for j := 0; j < c.wo; j++ {
					want := 0.0
					for ci := 0; ci < c.cin; ci++ {
						for a := 0; a < c.k; a++ {
							for b := 0; b < c.k; b++ {
								r, q := c.stride*i+a-c.pad, c.stride*j+b-c.pad
								if r >= 0 && r < c.hin && q >= 0 && q < c.win {
									want += W[((o*c.cin+ci)*c.k+a)*c.k+b] * x[(ci*c.hin+r)*c.win+q]
								}
							}
						}
					}
					if got := out[(o*c.ho+i)*c.wo+j]; math.Abs(got-want) > 1e-12*(1+math.Abs(want)) {
						t.Fatalf("%+v: out[%d,%d,%d] = %v, want %v", c, o, i, j, got, want)
					}
				}
			}
		}
		din, dW := make([]float64, c.inLen()), make([]float64, c.wLen())
		c.bwdIn(models.NewDgemm(1), W, y, din)
		c.bwdW(models.NewDgemm(1), y, x, dW)
		dot := func(a, b []float64) (s float64) {
			for i := range a {
				s += a[i] * b[i]
			}
			return s
		}
		lhs := dot(out, y)
		if r := dot(x, din); math.Abs(r-lhs) > 1e-10*(1+math.Abs(lhs)) {
			t.Fatalf("%+v: ⟨x, convᵀy⟩ = %v, ⟨conv x, y⟩ = %v", c, r, lhs)
		}
		if r := dot(W, dW); math.Abs(r-lhs) > 1e-10*(1+math.Abs(lhs)) {
			t.Fatalf("%+v: ⟨W, ∂_W⟩ = %v, ⟨conv x, y⟩ = %v", c, r, lhs)
		}
	}
}

// imageNet is a small engine network on 1×28×28 inputs.
func imageNet(t *testing.T) models.Model {
	t.Helper()
	arch := models.Arch{Name: "image-small", Input: models.Shape{C: 1, H: 28, W: 28}, Classes: 10,
		Layers: []models.LayerSpec{{Kind: models.KindFlatten}, models.Dense(3), {Kind: models.KindELU}, models.Dense(10)}}
	m, err := models.NewCPUModel(arch)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A run with each two-Dense-layer body trains g_φ (reports its arch and widths,
// refreshes, a non-zero perturbation), changes the parameters and dFIL, and leaves ε
// — every accountant's number and σ — that of the same run without g_φ. The CNN runs
// on 1×28×28 images, the MLP2 on 6-feature rows.
func TestPerturbCNNRun(t *testing.T) {
	cases := []struct {
		arch   string
		model  func(*testing.T) models.Model
		data   func() *data.Split
		h2     int // set; 0: the default (the CNN's is H)
		wantH2 int
	}{
		{PerturbArchCNN, imageNet, func() *data.Split { return imageToyData(60, 20, 9) }, 0, 4},
		{PerturbArchMLP2, smallNet, func() *data.Split { return toyData(60, 20, 6, 3, 9) }, 3, 3},
	}
	for _, c := range cases {
		t.Run(c.arch, func(t *testing.T) {
			data := c.data()
			run := func(tc TuningConfig) *Result {
				cfg := tuningConfig()
				cfg.Steps, cfg.FILCoords, cfg.Tuning = 3, 2, tc
				res, err := Run(context.Background(), cfg, Options{Model: c.model(t), Data: data})
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			plainCfg := TuningConfig{PretrainPublic: 0.5, PretrainSteps: 10}
			plain := run(plainCfg)
			on := plainCfg
			on.PerturbNet, on.PerturbArch, on.PerturbSteps, on.PerturbBatch, on.PerturbHidden, on.PerturbLambda = true, c.arch, 2, 4, 4, 10
			on.PerturbHidden2 = c.h2
			pr := run(on)
			if pr.Epsilon != plain.Epsilon || pr.Sigma != plain.Sigma || !(pr.Epsilon > 0) {
				t.Fatalf("ε with g_φ %v (σ %v), without %v (σ %v)", pr.Epsilon, pr.Sigma, plain.Epsilon, plain.Sigma)
			}
			g := pr.Tuning.Perturb
			if g == nil || g.Arch != c.arch || g.Hidden != 4 || g.Hidden2 != c.wantH2 || g.Refreshes != 3 || !(g.PerturbNorm > 0) || !strings.Contains(g.Privacy, "ε") {
				t.Fatalf("tuning.perturb %+v", g)
			}
			same := true
			for i, v := range plain.Repeats[0].Params {
				same = same && pr.Repeats[0].Params[i] == v
			}
			if same || pr.Repeats[0].DFILMax == plain.Repeats[0].DFILMax || !(pr.Repeats[0].DFILMax > 0) {
				t.Fatalf("trained g_φ changed nothing: dFIL %v vs %v", pr.Repeats[0].DFILMax, plain.Repeats[0].DFILMax)
			}
		})
	}
	defaults := []struct {
		tc     TuningConfig
		h, h2  int
		source string
	}{
		{TuningConfig{PerturbNet: true, PerturbArch: PerturbArchCNN}, 256, 256, "Table B.6"},
		{TuningConfig{PerturbNet: true, PerturbArch: PerturbArchCNN, PerturbHidden: 64}, 64, 64, "Table B.6 (equal widths)"},
		{TuningConfig{PerturbNet: true, PerturbArch: PerturbArchMLP2}, 512, 256, "Table B.5"},
		{TuningConfig{PerturbNet: true}, 32, 0, "the one-layer MLP"},
	}
	for _, d := range defaults {
		got := d.tc.perturbDefaults()
		if got.PerturbHidden != d.h || got.PerturbHidden2 != d.h2 {
			t.Fatalf("%s: default widths %d, %d, want %d, %d", d.source, got.PerturbHidden, got.PerturbHidden2, d.h, d.h2)
		}
	}
}

// The CNN body is refused on inputs that are not 1×28×28, an unknown body is refused,
// perturb_arch without perturb_net is refused, and so is a second width where there
// is no second layer or a negative one, with errors that name the problem.
func TestPerturbCNNRefusals(t *testing.T) {
	cases := []struct {
		name string
		tc   TuningConfig
		want string
	}{
		{"cnn on 6-dim inputs", TuningConfig{PretrainPublic: 0.5, PerturbNet: true, PerturbArch: PerturbArchCNN}, "takes 1×28×28 images; the data are 1×1×6"},
		{"unknown body", TuningConfig{PretrainPublic: 0.5, PerturbNet: true, PerturbArch: "rnn"}, `perturb_arch = "rnn"`},
		{"arch without the net", TuningConfig{PretrainPublic: 0.5, PerturbArch: PerturbArchCNN}, "need perturb_net"},
		{"hidden2 on the one-layer mlp", TuningConfig{PretrainPublic: 0.5, PerturbNet: true, PerturbHidden2: 8}, "has one hidden layer"},
		{"negative hidden2", TuningConfig{PretrainPublic: 0.5, PerturbNet: true, PerturbArch: PerturbArchMLP2, PerturbHidden2: -1}, "perturb_hidden2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := tuningConfig()
			cfg.Tuning = c.tc
			_, err := Run(context.Background(), cfg, Options{Model: smallNet(t), Data: toyData(40, 10, 6, 3, 4)})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// The batched CNN body (perturbbatch_cnn.go) equals the per-sample reference: the
// loss sum, its gradient in every parameter block, each sample's FIL sum and each
// perturbation, for each clip, with and without a mask, with dense, one-hot and mixed
// probes, in one case over more tangent rows than one chunk holds.
func TestPerturbCNNBatchMatchesPerSample(t *testing.T) {
	for _, body := range deepBodies {
		t.Run(body.name, func(t *testing.T) { checkDeepBatch(t, body.conv, body.h+1, body.h2+1) })
	}
}

func checkDeepBatch(t *testing.T, conv bool, h, h2 int) {
	const p = 6
	for ci, clip := range perturbClips {
		for _, masked := range []bool{false, true} {
			nSamples := 24
			if ci == 0 && !masked {
				nSamples = 290 // > pnChunkRows tangent rows: two chunks
			}
			probes := []string{"dense", "one-hot", "mixed"}[ci]
			rng := rand.New(rand.NewPCG(uint64(ci), 123))
			var mask []bool
			if masked {
				mask = []bool{true, false, true, true, false, true}
			}
			n := randomPerturbDeep(conv, p, h, h2, clip, mask, rng)
			sms := batchTestSamples(784, p, nSamples, probes, mask, rng)
			name := fmt.Sprintf("clip %+v masked %v probes %s", clip, masked, probes)
			o := n.deepOff
			checkBatchMatchesPerSample(t, name, n, sms, func(i int) string {
				b := 0
				for i >= o[b+1] {
					b++
				}
				return fmt.Sprintf("%s [%d]", cnnBlockNames[b], i-o[b])
			})
		}
	}
}

// checkBlockGradients compares grad, the hand-derived ∂ℓ/∂φ of n's loss on sm, with
// float64 central finite differences: every entry of blocks with at most maxPer
// entries, maxPer random entries of larger ones (blocks are [offs[b], offs[b+1]),
// named names[b]; empty blocks are skipped). Each non-empty block must have a
// non-zero derivative among those checked.
func checkBlockGradients(t *testing.T, name string, n *perturbNet, sm *pnSample, grad []float64, offs []int, names []string, maxPer int, tol float64, rng *rand.Rand) {
	t.Helper()
	for b := 0; b+1 < len(offs); b++ {
		lo, hi := offs[b], offs[b+1]
		if hi == lo {
			continue
		}
		idx := make([]int, 0, min(maxPer, hi-lo))
		if hi-lo <= maxPer {
			for i := lo; i < hi; i++ {
				idx = append(idx, i)
			}
		} else {
			for len(idx) < maxPer {
				idx = append(idx, lo+rng.IntN(hi-lo))
			}
		}
		nonzero := false
		for _, i := range idx {
			const eps = 1e-6
			old := n.phi[i]
			n.phi[i] = old + eps
			lp := n.loss(sm, nil)
			n.phi[i] = old - eps
			lm := n.loss(sm, nil)
			n.phi[i] = old
			fd := (lp - lm) / (2 * eps)
			if math.Abs(fd-grad[i]) > tol*(1+math.Abs(fd)) {
				t.Fatalf("%s: %s: ∂ℓ/∂φ[%d] = %v, finite differences %v", name, names[b], i-lo, grad[i], fd)
			}
			nonzero = nonzero || math.Abs(fd) > 1e-8
		}
		if !nonzero {
			t.Fatalf("%s: %s: every checked derivative is zero", name, names[b])
		}
	}
}
