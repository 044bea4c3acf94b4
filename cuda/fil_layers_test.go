package cuda

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpfil/dpfil/models"
)

// TestFILDotSqLayers checks the layer-by-layer FIL reduction (FILDotSqLayer, then
// FILDotSqEnd) against a float64 reference and, bit for bit, against the one-call
// reduction over the whole chunk-wide tensor-major buffer (BlockedDotSqBatch), with
// host results (managed memory: the call waits and copies) and device results
// (plain memory: nothing waits), on the emulator and (GPU build) the stand-in or a
// GPU. The layers are one tensor or two; a layer's buffer is its tensors for every
// row, tensor-major — the same values as the layer's part of the chunk-wide buffer.
func TestFILDotSqLayers(t *testing.T) {
	layers := [][]int{{0, 300, 300, 10}, {310, 7}, {317, 600, 917, 83}}
	const P = 1000
	cs, kc := 3, 5
	rows := cs * kc
	rng := rand.New(rand.NewPCG(5, 6))
	gv, tg := randVec(rng, cs*P), randVec(rng, rows*P)
	var all []int
	for _, l := range layers {
		all = append(all, l...)
	}
	wgd, wdd := make([]float64, rows), make([]float64, rows)
	for r := 0; r < rows; r++ {
		s := r / kc
		for bi := 0; bi < len(all); bi += 2 {
			o, z := all[bi], all[bi+1]
			for i := 0; i < z; i++ {
				v := tg[rows*o+r*z+i]
				wgd[r] += gv[s*P+o+i] * v
				wdd[r] += v * v
			}
		}
	}
	for _, drv := range testDrivers(t) {
		for _, plain := range []bool{false, true} {
			name := drv.Name() + map[bool]string{false: " managed", true: " plain"}[plain]
			be, up := openUploader(t, drv, plain)
			g32, tg32 := up(gv), up(tg)
			// The one-call reduction over the chunk-wide buffer.
			rgd, rdd := make([]float64, rows), make([]float64, rows)
			be.BlockedDotSqBatch(g32, P, tg32, cs, kc, kc, all, rgd, rdd)
			// Layer by layer; rows·o is where a layer's tensors start in the
			// chunk-wide buffer, and they are contiguous there.
			for li, l := range layers {
				size := 0
				for bi := 1; bi < len(l); bi += 2 {
					size += l[bi]
				}
				be.FILDotSqLayer(g32, P, tg32[rows*l[0]:rows*(l[0]+size)], cs, kc, l, li == 0)
			}
			gd, dd := make([]float64, rows), make([]float64, rows)
			if plain {
				dgd, ddd := be.AllocFloat64(rows), be.AllocFloat64(rows)
				be.FILDotSqEnd(cs, kc, dgd, ddd)
				be.CopyFloat64(gd, dgd)
				be.CopyFloat64(dd, ddd)
			} else {
				be.FILDotSqEnd(cs, kc, gd, dd)
			}
			if err := be.Err(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for r := 0; r < rows; r++ {
				if gd[r] != rgd[r] || dd[r] != rdd[r] {
					t.Errorf("%s row %d: layer by layer (%v, %v), in one call (%v, %v): want equal bits", name, r, gd[r], dd[r], rgd[r], rdd[r])
				}
				if math.Abs(gd[r]-wgd[r]) > 1e-9*(1+math.Abs(wgd[r])) || math.Abs(dd[r]-wdd[r]) > 1e-9*wdd[r] {
					t.Errorf("%s row %d: (%v, %v), want (%v, %v)", name, r, gd[r], dd[r], wgd[r], wdd[r])
				}
			}
			// A reduction continued with another row count is an error, not a wrong number.
			be.FILDotSqLayer(g32, P, tg32, cs, kc, layers[0], true)
			be.FILDotSqLayer(g32, P, tg32, cs, kc-1, layers[1], false)
			if be.Err() == nil {
				t.Errorf("%s: a FIL reduction continued with fewer rows was accepted", name)
			}
			be.Close()
		}
	}
}

// TestCol2imRowsWrites checks that Col2imRows writes the gathered patch sums over
// whatever its output held (the network no longer zeroes it first), while Col2im,
// models.Backend's per-sample form, still adds to it.
func TestCol2imRowsWrites(t *testing.T) {
	g := models.ConvGeom{InC: 3, H: 8, W: 8, KH: 3, KW: 3, Stride: 1, PadT: 1, PadB: 1, PadL: 1, PadR: 1}
	g.OutH, g.OutW = 8, 8
	m, inN := 4, 3*8*8
	ld := m * g.HWo()
	ref := models.NewCPUBackend[float64]()
	for _, drv := range testDrivers(t) {
		be, err := NewBackend(keepOpen{drv})
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(7, 8))
		cols := randVec(rng, g.CKK()*ld)
		old := randVec(rng, m*inN)
		want := make([]float64, m*inN)
		for r := 0; r < m; r++ {
			// Row r's patches are columns r·HWo… of cols (row stride ld).
			ref.Col2im(g, cols[r*g.HWo():], ld, want[r*inN:(r+1)*inN])
		}
		dx := f32(be, old)
		be.Col2imRows(g, m, f32(be, cols), ld, dx, inN)
		if e := relErr(dx, want); e > 1e-6 {
			t.Errorf("%s: Col2imRows over a non-zero output: relative error %.3g", drv.Name(), e)
		}
		added := f32(be, old)
		be.Col2im(g, f32(be, cols), ld, added[:inN])
		for i := range want[:inN] {
			want[i] += old[i]
		}
		if e := relErr(added[:inN], want[:inN]); e > 1e-6 {
			t.Errorf("%s: Col2im adds: relative error %.3g", drv.Name(), e)
		}
		if err := be.Err(); err != nil {
			t.Fatal(err)
		}
		be.Close()
	}
}

// TestFILDotSqDense checks a dense layer's closed-form FIL terms (FILDotSqDense)
// against a float64 reference that forms the rank-2 weight tangents δ̇ ⊗ a + δ ⊗ ȧ
// and the bias tangents δ̇ explicitly, continuing a reduction begun by another
// layer, with input tangents given as rows and as one-hot rows (the sparse first
// layer; one of them a zero row), on the emulator and (GPU build) the stand-in or a
// GPU.
func TestFILDotSqDense(t *testing.T) {
	const inN, outN, off = 9, 5, 20 // the dense layer's weights at off, biases after them
	P := off + outN*inN + outN
	cs, kc := 3, 4
	rows := cs * kc
	rng := rand.New(rand.NewPCG(9, 10))
	gv := randVec(rng, cs*P)
	a, ta := randVec(rng, cs*inN), randVec(rng, rows*inN)
	D, tD := randVec(rng, cs*outN), randVec(rng, rows*outN)
	first := randVec(rng, rows*off) // the layer before: one tensor (0, off)
	idx := make([]int, rows)
	val := randVec(rng, rows)
	for r := range idx {
		idx[r] = (3 * r) % inN
	}
	idx[5] = -1
	for _, sparse := range []bool{false, true} {
		wgd, wdd := make([]float64, rows), make([]float64, rows)
		for r := 0; r < rows; r++ {
			s := r / kc
			for i := 0; i < off; i++ {
				v := first[r*off+i]
				wgd[r] += gv[s*P+i] * v
				wdd[r] += v * v
			}
			for o := 0; o < outN; o++ {
				for i := 0; i < inN; i++ {
					ai := ta[r*inN+i]
					if sparse {
						ai = 0
						if idx[r] == i {
							ai = val[r]
						}
					}
					v := tD[r*outN+o]*a[s*inN+i] + D[s*outN+o]*ai
					wgd[r] += gv[s*P+off+o*inN+i] * v
					wdd[r] += v * v
				}
				v := tD[r*outN+o]
				wgd[r] += gv[s*P+off+outN*inN+o] * v
				wdd[r] += v * v
			}
		}
		for _, drv := range testDrivers(t) {
			be, err := NewBackend(keepOpen{drv})
			if err != nil {
				t.Fatal(err)
			}
			g32 := f32(be, gv)
			be.FILDotSqLayer(g32, P, f32(be, first), cs, kc, []int{0, off}, true)
			var ta32, val32 []float32
			var ix []int
			if sparse {
				ix, val32 = idx, f32(be, val)
			} else {
				ta32 = f32(be, ta)
			}
			be.FILDotSqDense(g32, P, cs, kc, inN, outN, off, off+outN*inN, f32(be, a), ta32, ix, val32, f32(be, D), f32(be, tD), false)
			gd, dd := make([]float64, rows), make([]float64, rows)
			be.FILDotSqEnd(cs, kc, gd, dd)
			if err := be.Err(); err != nil {
				t.Fatalf("%s: %v", drv.Name(), err)
			}
			for r := 0; r < rows; r++ {
				if math.Abs(gd[r]-wgd[r]) > 1e-12*(1+math.Abs(wgd[r])) || math.Abs(dd[r]-wdd[r]) > 1e-12*wdd[r] {
					t.Errorf("%s sparse=%v row %d: (%v, %v), want (%v, %v)", drv.Name(), sparse, r, gd[r], dd[r], wgd[r], wdd[r])
				}
			}
			be.Close()
		}
	}
}

// openUploader opens a backend on drv (device memory when plain, else managed) and
// returns it with a function that uploads float64 values as float32 to a new buffer.
func openUploader(t *testing.T, drv Driver, plain bool) (*Backend, func([]float64) []float32) {
	t.Helper()
	open := NewBackend
	if plain {
		open = NewDeviceBackend
	}
	be, err := open(keepOpen{drv})
	if err != nil {
		t.Fatal(err)
	}
	return be, func(v []float64) []float32 {
		h := make([]float32, len(v))
		for i, x := range v {
			h[i] = float32(x)
		}
		d := be.Alloc(len(v))
		be.Copy(d, h)
		return d
	}
}
