package attack

import (
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"testing"

	"github.com/dpfil/dpfil/data"
)

// splitPool stores the values of p (which must be float32-representable) with its
// first k samples as float32 in X32 and the rest as float64 in X.
func splitPool(p Pool, k int) Pool {
	q := Pool{Y: slices.Clone(p.Y), D: p.D}
	for _, v := range p.X[:k*p.D] {
		q.X32 = append(q.X32, float32(v))
	}
	q.X = slices.Clone(p.X[k*p.D:])
	return q
}

// roundedPool is synthPool with its values rounded to float32, held as float64.
func roundedPool(n, d, classes int, seed uint64) Pool {
	p := synthPool(n, d, classes, seed)
	for i, v := range p.X {
		p.X[i] = float64(float32(v))
	}
	return p
}

// TestPoolMixedStorage checks N, Head, ImageInto and AppendImages of pools that hold
// the same values with 0, some or all samples as float32 against the all-float64 pool.
func TestPoolMixedStorage(t *testing.T) {
	const n, d = 7, 5
	ref := roundedPool(n, d, 3, 4)
	img := func(i int) []float64 { return ref.X[i*d : (i+1)*d] }
	for _, k := range []int{0, 1, 3, n - 1, n} {
		t.Run(fmt.Sprintf("float32 head %d", k), func(t *testing.T) {
			p := splitPool(ref, k)
			if !p.valid() || p.N() != n || p.n32() != k {
				t.Fatalf("valid %v, N %d, float32 samples %d", p.valid(), p.N(), p.n32())
			}
			buf := make([]float64, d)
			for i := 0; i < n; i++ {
				if got := p.ImageInto(i, buf); !slices.Equal(got, img(i)) {
					t.Fatalf("sample %d: %v, want %v", i, got, img(i))
				}
			}
			for lo := 0; lo <= n; lo++ {
				for hi := lo; hi <= n; hi++ {
					pre := []float64{-1}
					got := p.AppendImages(pre, lo, hi)
					want := append([]float64{-1}, ref.X[lo*d:hi*d]...)
					if !slices.Equal(got, want) {
						t.Fatalf("samples [%d, %d): %v, want %v", lo, hi, got, want)
					}
				}
			}
			for h := -1; h <= n+1; h++ {
				hp := p.Head(h)
				wantN := h
				if h <= 0 || h >= n {
					wantN = n
				}
				if !hp.valid() || hp.N() != wantN || !slices.Equal(hp.Y, ref.Y[:wantN]) ||
					!slices.Equal(hp.AppendImages(nil, 0, wantN), ref.X[:wantN*d]) {
					t.Fatalf("Head(%d): %d samples (valid %v), want the first %d", h, hp.N(), hp.valid(), wantN)
				}
			}
			x, y, err := p.gather([]int{n - 1, 0, k / 2})
			if err != nil || !slices.Equal(x, slices.Concat(img(n-1), img(0), img(k/2))) ||
				!slices.Equal(y, []int{ref.Y[n-1], ref.Y[0], ref.Y[k/2]}) {
				t.Fatalf("gather: %v %v %v", x, y, err)
			}
		})
	}
	if (Pool{X32: make([]float32, 6), X: make([]float64, 4), Y: make([]int, 2), D: 5}).valid() {
		t.Error("a pool whose float32 part is not whole samples is valid")
	}
}

// TestAppendImagesAllocationFree checks that reading samples into a buffer with room
// for them allocates nothing, on both storages.
func TestAppendImagesAllocationFree(t *testing.T) {
	p := splitPool(roundedPool(10, 8, 2, 1), 5)
	buf := make([]float64, 0, 10*8)
	if a := testing.AllocsPerRun(50, func() {
		buf = p.AppendImages(buf[:0], 2, 9)
		p.ImageInto(7, buf[:8])
	}); a != 0 {
		t.Fatalf("%v allocations per run, want 0", a)
	}
}

// TestPoolFromDatasetSharesImages checks that a dataset's pool reads the dataset's
// float32 images in place: no float64 copy of the split is allocated.
func TestPoolFromDatasetSharesImages(t *testing.T) {
	const n = 1000
	ds := &data.Dataset{N: n, C: 3, H: 32, W: 32, Classes: 10, Images: make([]float32, n*3*32*32), Labels: make([]int, n)}
	for i := range ds.Images {
		ds.Images[i] = float32(i%255) / 255
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	p := PoolFromDataset(ds)
	runtime.ReadMemStats(&after)
	// a float64 copy is 8·n·3 072 bytes = 24.6 MB; the labels are 8 kB
	if b := after.TotalAlloc - before.TotalAlloc; b > 1<<20 {
		t.Errorf("PoolFromDataset allocated %d bytes", b)
	}
	if p.N() != n || p.D != 3072 || len(p.X) != 0 || &p.X32[0] != &ds.Images[0] {
		t.Fatalf("pool of %d samples of %d values, %d float64 values; shares the images: %v", p.N(), p.D, len(p.X), &p.X32[0] == &ds.Images[0])
	}
	if got := p.ImageInto(n-1, make([]float64, p.D)); got[5] != float64(ds.Image(n - 1)[5]) {
		t.Fatalf("last sample value %v, want %v", got[5], ds.Image(n - 1)[5])
	}
}

// TestGameFloat32PoolBitIdentical plays the same games (data and uniform prior, the
// gradient attack, a test accuracy) on one set of float32-representable values stored
// as float64, as float32 and half of each, and checks every trial result, the noise
// half-width and the ℓ∞ points are identical.
func TestGameFloat32PoolBitIdentical(t *testing.T) {
	const d, hidden, classes, poolN = 12, 4, 3, 150
	ref := roundedPool(poolN, d, classes, 21)
	evalRef := roundedPool(40, d, classes, 22)
	for _, kind := range []string{PriorData, PriorUniform} {
		t.Run(kind, func(t *testing.T) {
			cfg := smallConfig()
			cfg.Sigma, cfg.Steps, cfg.PriorKind = 0.5, 4, kind
			cfg.Gradient = GradientConfig{Enabled: true, Iters: 15, Restarts: 1, LR: 0.02}
			type outcome struct {
				res  []TrialResult
				h    float64
				linf []LinfPoint
			}
			play := func(pool, eval Pool) (outcome, *Game) {
				m, err := NewMLP(d, hidden, classes)
				if err != nil {
					t.Fatal(err)
				}
				g, err := NewGame(cfg, pool, func() Net { return m }, m.Init)
				if err != nil {
					t.Fatal(err)
				}
				if err := g.SetEval(eval); err != nil {
					t.Fatal(err)
				}
				res := runGame(t, g, 4, 2)
				lp, err := linfPoints(g.pool, res, cfg.Q, cfg.Sigma, cfg.Steps)
				if err != nil {
					t.Fatal(err)
				}
				return outcome{res, g.NoiseHalfWidth(), lp}, g
			}
			want, _ := play(ref, evalRef)
			if want.res[0].Reconstruction == nil || want.res[0].TestAccuracy == nil {
				t.Fatal("the reference game ran no gradient attack or test accuracy")
			}
			for _, k := range []int{poolN, poolN / 2} {
				p := splitPool(ref, k)
				got, g := play(p, splitPool(evalRef, 40*k/poolN))
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%d of %d samples float32: results differ from the float64 pool's", k, poolN)
				}
				if &g.pool.X32[0] != &p.X32[0] {
					t.Errorf("%d float32 samples: the game copied the pool's float32 storage", k)
				}
				if kind == PriorUniform {
					// the noise is kept as float64, not rounded to float32
					notF32 := 0
					for _, i := range g.rest {
						for _, v := range g.pool.AppendImages(nil, i, i+1) {
							if float64(float32(v)) != v {
								notF32++
							}
						}
					}
					if notF32 == 0 {
						t.Errorf("%d float32 samples: every noise value is float32", k)
					}
				}
			}
		})
	}
}

// gradsOnly is a Net without the ClippedSummer fast path: D₋'s clipped gradients are
// summed from per-sample gradients.
type gradsOnly struct{ Net }

// TestKnownClippedSumScratch checks the per-worker gradient scratch: none with a
// ClippedSummer, min(64, |D₋|) rows without one, and that the chunked sum of D₋'s
// clipped gradients equals a one-sample-at-a-time sum for |D₋| below, at and above a
// chunk.
func TestKnownClippedSumScratch(t *testing.T) {
	const d, hidden, classes = 10, 4, 3
	m, err := NewMLP(d, hidden, classes)
	if err != nil {
		t.Fatal(err)
	}
	for _, known := range []int{1, 9, gradChunk, gradChunk + 7, 2*gradChunk + 1} {
		cfg := smallConfig()
		cfg.Known = known
		pool := synthPool(known+cfg.PriorSize+10, d, classes, 3)
		fast, err := NewGame(cfg, pool, func() Net { return m }, m.Init)
		if err != nil {
			t.Fatal(err)
		}
		if st := fast.newState(); st.grads != nil {
			t.Errorf("|D₋| = %d: %d gradient values allocated for a ClippedSummer", known, len(st.grads))
		}
		g, err := NewGame(cfg, pool, func() Net { return gradsOnly{m} }, m.Init)
		if err != nil {
			t.Fatal(err)
		}
		st := g.newState()
		if want := min(gradChunk, known) * g.P; len(st.grads) != want {
			t.Errorf("|D₋| = %d: %d gradient values, want %d", known, len(st.grads), want)
		}
		theta := g.Theta0()
		member := make([]bool, known)
		for j := range member {
			member[j] = j%5 != 2
		}
		for _, mem := range [][]bool{nil, member} {
			loss, err := g.knownClippedSum(st, theta, mem)
			if err != nil {
				t.Fatal(err)
			}
			// reference: one sample at a time, in D₋'s order
			sum, one, l1 := make([]float64, g.P), make([]float64, g.P), make([]float64, 1)
			lossSum, cnt := 0.0, 0
			for j, i := range g.known {
				if mem != nil && !mem[j] {
					continue
				}
				if err := m.PerSampleGrads(theta, pool.AppendImages(nil, i, i+1), pool.Y[i:i+1], 1, one, l1); err != nil {
					t.Fatal(err)
				}
				clipRows(one, 1, g.P, cfg.Clip, nil)
				for k, v := range one {
					sum[k] += v
				}
				lossSum += l1[0]
				cnt++
			}
			if !slices.Equal(st.sum, sum) || loss != lossSum/float64(cnt) {
				t.Fatalf("|D₋| = %d: chunked sum differs from the one-at-a-time sum (loss %v, want %v)", known, loss, lossSum/float64(cnt))
			}
		}
	}
}
