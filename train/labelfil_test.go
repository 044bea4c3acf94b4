package train

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpfil/dpfil/models"
)

// softLabelClipped returns g̃(y) for a soft label vector yv: the clipped gradient of
// the cross-entropy Σ_c yv_c ℓ_c, from the per-class gradients gc (K×P).
func softLabelClipped(clip models.Clip, gc [][]float64, yv []float64) []float64 {
	g := make([]float64, len(gc[0]))
	for c, w := range yv {
		for i, v := range gc[c] {
			g[i] += w * v
		}
	}
	models.ClipVector(clip, g)
	return g
}

// TestLabelFILFiniteDifferences: J_yᵀJ_y from LabelJacobianGram equals the Gram
// matrix of the central finite differences of g̃(y) in each label coordinate, on the
// linear model, the mlp and a small conv net, smooth and hard clipping.
func TestLabelFILFiniteDifferences(t *testing.T) {
	linear, _ := models.ArchByName("linear")
	mlp, _ := models.ArchByName("mlp")
	for _, c := range []struct {
		arch models.Arch
		clip models.Clip
	}{
		{linear, models.Clip{Mode: models.ClipSmooth, C: 0.8}},
		{mlp, models.Clip{Mode: models.ClipSmooth, C: 0.9}},
		{mlp, models.Clip{Mode: models.ClipHard, C: 0.7}},
		{smallConvArch(), models.Clip{Mode: models.ClipSmooth, C: 0.8}},
	} {
		t.Run(c.arch.Name, func(t *testing.T) {
			const batch = 3
			net, params, x, y := float64Setup(t, c.arch, batch, 21)
			c.clip.C *= gradNorm(t, net, params, x, y)
			gram, err := LabelJacobianGram(net, params, x, y, batch, c.clip)
			if err != nil {
				t.Fatal(err)
			}
			d, p, k := net.InputDim(), net.NumParams(), c.arch.Classes
			for s := 0; s < batch; s++ {
				gc := make([][]float64, k)
				for cl := 0; cl < k; cl++ {
					g, _, err := net.PerSampleGrads(params, x[s*d:(s+1)*d], []int{cl}, 1)
					if err != nil {
						t.Fatal(err)
					}
					gc[cl] = g
				}
				const h = 1e-5
				J := make([][]float64, k) // columns
				for cl := 0; cl < k; cl++ {
					plus, minus := make([]float64, k), make([]float64, k)
					plus[y[s]], minus[y[s]] = 1, 1
					plus[cl] += h
					minus[cl] -= h
					gp, gm := softLabelClipped(c.clip, gc, plus), softLabelClipped(c.clip, gc, minus)
					J[cl] = make([]float64, p)
					for i := range gp {
						J[cl][i] = (gp[i] - gm[i]) / (2 * h)
					}
				}
				var scale float64
				for a := 0; a < k; a++ {
					scale = max(scale, math.Abs(gram[s*k*k+a*k+a]))
				}
				for a := 0; a < k; a++ {
					for b := 0; b < k; b++ {
						var fd float64
						for i := range J[a] {
							fd += J[a][i] * J[b][i]
						}
						if got := gram[s*k*k+a*k+b]; math.Abs(got-fd) > 1e-6*scale {
							t.Errorf("sample %d (label %d): (JᵀJ)[%d][%d] = %.10g, finite differences %.10g", s, y[s], a, b, got, fd)
						}
					}
				}
				tr, top, err := symTraceMaxEig(gram[s*k*k:(s+1)*k*k], k)
				if err != nil || top > tr*(1+1e-12) || top < tr/float64(k)*(1-1e-12) {
					t.Errorf("sample %d: trace %g, top eigenvalue %g, %v", s, tr, top, err)
				}
			}
		})
	}
}

// TestLabelLinearity checks the premise of label FIL on the linear model: the
// cross-entropy gradient for a soft label vector y, computed in closed form
// (∂ℓ/∂z = p·Σy − y, g_W = (∂ℓ/∂z)xᵀ, g_b = ∂ℓ/∂z), is Σ_c y_c g_c with the engine's
// hard-label gradients g_c.
func TestLabelLinearity(t *testing.T) {
	arch, _ := models.ArchByName("linear")
	net, params, x, _ := float64Setup(t, arch, 1, 8)
	k, d := 10, 784
	r := rand.New(rand.NewPCG(1, 2))
	yv := make([]float64, k)
	sum := 0.0
	for c := range yv {
		yv[c] = r.Float64()
		sum += yv[c]
	}
	z := make([]float64, k)
	mx := math.Inf(-1)
	for c := 0; c < k; c++ {
		z[c] = params[k*d+c]
		for i := 0; i < d; i++ {
			z[c] += params[c*d+i] * x[i]
		}
		mx = math.Max(mx, z[c])
	}
	var lse float64
	for _, v := range z {
		lse += math.Exp(v - mx)
	}
	want := make([]float64, k*d+k)
	for c := 0; c < k; c++ {
		dz := math.Exp(z[c]-mx)/lse*sum - yv[c]
		for i := 0; i < d; i++ {
			want[c*d+i] = dz * x[i]
		}
		want[k*d+c] = dz
	}
	got := make([]float64, len(want))
	for c := 0; c < k; c++ {
		g, _, err := net.PerSampleGrads(params, x, []int{c}, 1)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range g {
			got[i] += yv[c] * v
		}
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("parameter %d: Σ y_c g_c = %g, soft-label gradient %g", i, got[i], want[i])
		}
	}
}
