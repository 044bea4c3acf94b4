package cuda

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unsafe"

	"github.com/dpfil/dpfil/models"
)

// TestPTXMatchesSource checks that the committed PTX was compiled from the committed
// dpfil.cu (make ptx records the source's SHA-256 in its first line) and that the
// kernels of the source, the PTX and the emulator's table are the same set.
func TestPTXMatchesSource(t *testing.T) {
	ptx, err := os.ReadFile("kernels/dpfil.ptx")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(kernelSource))
	first, _, _ := strings.Cut(string(ptx), "\n")
	if !strings.Contains(first, hex.EncodeToString(sum[:])) {
		t.Fatalf("kernels/dpfil.ptx is stale: its header %q does not name dpfil.cu's sha256 %x; run make ptx", first, sum)
	}
	names := func(re string, src string) []string {
		var out []string
		for _, m := range regexp.MustCompile(re).FindAllStringSubmatch(src, -1) {
			out = append(out, m[1])
		}
		sort.Strings(out)
		return out
	}
	inSrc := names(`(?m)^KERNEL (k_\w+)\(`, kernelSource)
	inPTX := names(`\.entry (k_\w+)\(`, string(ptx))
	var inEmu []string
	for n := range emuKernels {
		inEmu = append(inEmu, n)
	}
	sort.Strings(inEmu)
	if strings.Join(inSrc, ",") != strings.Join(inPTX, ",") || strings.Join(inSrc, ",") != strings.Join(inEmu, ",") {
		t.Fatalf("kernel sets differ:\n source   %v\n PTX      %v\n emulator %v", inSrc, inPTX, inEmu)
	}
	if len(inSrc) < 9 {
		t.Fatalf("only %d kernels found in dpfil.cu", len(inSrc))
	}
	code := regexp.MustCompile(`//[^\n]*`).ReplaceAllString(kernelSource, "")
	for _, banned := range []string{"__shared__", "__syncthreads", "atomic", "__shfl"} {
		if strings.Contains(code, banned) {
			t.Errorf("dpfil.cu uses %s, which the emulator cannot run", banned)
		}
	}
}

func randVec(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(float32(rng.NormFloat64()))
	}
	return v
}

func f32(be *Backend, v []float64) []float32 {
	out := be.Alloc(len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

func relErr(got []float32, want []float64) float64 {
	var num, den float64
	for i, w := range want {
		d := float64(got[i]) - w
		num += d * d
		den += w * w
	}
	if den == 0 {
		return math.Sqrt(num)
	}
	return math.Sqrt(num / den)
}

// TestKernelsAgainstCPU checks every kernel directly against the float64 CPU backend
// on geometries the built-in networks do not use (stride 3, asymmetric padding,
// windows larger than the stride), on every driver.
func TestKernelsAgainstCPU(t *testing.T) {
	convs := []models.ConvGeom{
		{InC: 2, H: 7, W: 9, KH: 3, KW: 2, Stride: 1, PadT: 1, PadB: 1, PadL: 0, PadR: 1},
		{InC: 3, H: 8, W: 8, KH: 4, KW: 4, Stride: 3, PadT: 2, PadB: 1, PadL: 1, PadR: 2},
		{InC: 1, H: 28, W: 28, KH: 8, KW: 8, Stride: 2, PadT: 3, PadB: 3, PadL: 3, PadR: 3},
	}
	pools := []models.PoolGeom{
		{C: 2, H: 6, W: 7, KH: 2, KW: 2, Stride: 1},
		{C: 3, H: 9, W: 9, KH: 3, KW: 2, Stride: 2},
	}
	ref := models.NewCPUBackend[float64]()
	for _, drv := range testDrivers(t) {
		be, err := NewBackend(drv)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		check := func(name string, got []float32, want []float64) {
			t.Helper()
			if e := relErr(got, want); e > 1e-5 || math.IsNaN(e) {
				t.Errorf("%s %s: relative error %.3g", drv.Name(), name, e)
			}
		}
		for i, g := range convs {
			g.OutH = (g.H+g.PadT+g.PadB-g.KH)/g.Stride + 1
			g.OutW = (g.W+g.PadL+g.PadR-g.KW)/g.Stride + 1
			ld := g.HWo() + 5
			x := randVec(rng, g.InC*g.H*g.W)
			c64 := make([]float64, g.CKK()*ld)
			ref.Im2col(g, x, c64, ld)
			c32 := be.Alloc(g.CKK() * ld)
			be.Im2col(g, f32(be, x), c32, ld)
			check("im2col "+string(rune('0'+i)), c32, c64)
			cols := randVec(rng, g.CKK()*ld)
			dx := randVec(rng, len(x))
			dx32 := f32(be, dx)
			ref.Col2im(g, cols, ld, dx)
			be.Col2im(g, f32(be, cols), ld, dx32)
			check("col2im "+string(rune('0'+i)), dx32, dx)
		}
		for i, g := range pools {
			g.OutH = (g.H-g.KH)/g.Stride + 1
			g.OutW = (g.W-g.KW)/g.Stride + 1
			n := 2
			x := randVec(rng, n*g.C*g.H*g.W)
			y := make([]float64, n*g.C*g.OutH*g.OutW)
			ref.AvgPool(g, n, x, y)
			y32 := be.Alloc(len(y))
			be.AvgPool(g, n, f32(be, x), y32)
			check("avgpool "+string(rune('0'+i)), y32, y)
			dy := randVec(rng, len(y))
			dx := randVec(rng, len(x))
			dx32 := f32(be, dx)
			ref.AvgPoolBack(g, n, dy, dx)
			be.AvgPoolBack(g, n, f32(be, dy), dx32)
			check("avgpool back "+string(rune('0'+i)), dx32, dx)
		}
		for _, f := range []models.Act{models.ActTanh, models.ActELU} {
			n, k, size := 3, 4, 37
			x := randVec(rng, n*size)
			y := make([]float64, len(x))
			ref.ActForward(f, x, y)
			y32 := be.Alloc(len(x))
			be.ActForward(f, f32(be, x), y32)
			check("act forward", y32, y)
			dy := randVec(rng, len(x))
			dx := make([]float64, len(x))
			ref.ActBackward(f, x, y, dy, dx)
			dx32 := be.Alloc(len(x))
			be.ActBackward(f, f32(be, x), f32(be, y), f32(be, dy), dx32)
			check("act backward", dx32, dx)
			tx, tdy := randVec(rng, n*k*size), randVec(rng, n*k*size)
			ty, tdx := make([]float64, len(tx)), make([]float64, len(tx))
			ref.ActTangent(f, n, k, size, x, y, dy, tx, ty, tdy, tdx)
			ty32, tdx32 := be.Alloc(len(tx)), be.Alloc(len(tx))
			be.ActTangent(f, n, k, size, f32(be, x), f32(be, y), f32(be, dy), f32(be, tx), ty32, f32(be, tdy), tdx32)
			check("act tangent ty", ty32, ty)
			check("act tangent tdx", tdx32, tdx)
		}
		for _, n := range []int{1, 7, 1000, 8205, 300001} {
			x, y := randVec(rng, n), randVec(rng, n)
			wxy, wyy := ref.DotSq(x, y)
			xy, yy := be.DotSq(f32(be, x), f32(be, y))
			if math.Abs(xy-wxy) > 1e-9*math.Max(1, math.Abs(wxy)) || math.Abs(yy-wyy) > 1e-9*wyy {
				t.Errorf("%s DotSq n=%d: got (%v, %v), want (%v, %v)", drv.Name(), n, xy, yy, wxy, wyy)
			}
			if d := be.Dot(f32(be, x), f32(be, y)); d != xy {
				t.Errorf("%s Dot n=%d = %v, DotSq's xy = %v", drv.Name(), n, d, xy)
			}
		}
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			m, n, k := 5, 7, 9
			lda, ldb, ldc := k+1, n+2, n+3
			if tr[0] {
				lda = m + 1
			}
			if tr[1] {
				ldb = k + 2
			}
			a, b, c := randVec(rng, 20*lda), randVec(rng, 20*ldb), randVec(rng, m*ldc)
			c32 := f32(be, c)
			ref.Gemm(tr[0], tr[1], m, n, k, 0.5, a, lda, b, ldb, 0.25, c, ldc)
			// A from Go memory, as a caller's parameter vector would be: staged.
			a32 := make([]float32, len(a))
			for i, v := range a {
				a32[i] = float32(v)
			}
			be.Gemm(tr[0], tr[1], m, n, k, 0.5, a32, lda, f32(be, b), ldb, 0.25, c32, ldc)
			check("gemm", c32, c)
		}
		if err := be.Err(); err != nil {
			t.Fatal(err)
		}
		be.Close()
	}
}

// TestErrorIsSticky checks that a driver error stops the backend and is reported,
// and that later calls do not run.
func TestErrorIsSticky(t *testing.T) {
	be, err := NewBackend(NewEmulator())
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	x := be.Alloc(4)
	be.launch("k_no_such_kernel", 4)
	if be.Err() == nil || !strings.Contains(be.Err().Error(), "k_no_such_kernel") {
		t.Fatalf("Err() = %v, want the failed launch", be.Err())
	}
	y := be.Alloc(4)
	x[0] = 1
	be.ActForward(models.ActTanh, x, y)
	if y[0] != 0 {
		t.Fatalf("ActForward ran after an error: y[0] = %v", y[0])
	}

	// A size beyond the kernels' 32-bit ints is an error, not a truncated launch.
	be2, err := NewBackend(NewEmulator())
	if err != nil {
		t.Fatal(err)
	}
	defer be2.Close()
	be2.launch("k_zero", 8, 1<<33, unsafe.Pointer(unsafe.SliceData(x)))
	if be2.Err() == nil || !strings.Contains(be2.Err().Error(), "32-bit") {
		t.Fatalf("oversized int argument: Err() = %v", be2.Err())
	}
	if y[0] != 0 {
		t.Fatalf("ActForward ran after an error: y[0] = %v", y[0])
	}
}

// TestDeviceOps checks the network-step kernels (models.DeviceOps and the batched
// reductions) directly against definitions written out in Go: one-hot inputs through
// the float64 CPU backend's im2col and GEMM for the sparse conv steps, plain loops for
// the rest. Geometries include stride 3 and asymmetric padding.
func TestDeviceOps(t *testing.T) {
	ref := models.NewCPUBackend[float64]()
	for _, drv := range testDrivers(t) {
		be, err := NewBackend(drv)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(3, 4))
		check := func(name string, got []float32, want []float64) {
			t.Helper()
			if e := relErr(got, want); e > 1e-6 || math.IsNaN(e) {
				t.Errorf("%s %s: relative error %.3g", drv.Name(), name, e)
			}
		}

		x := f32(be, randVec(rng, 37))
		be.Zero(x)
		check("zero", x, make([]float64, 37))

		a, b, hw := 3, 5, 7
		src := randVec(rng, a*b*hw)
		want := make([]float64, len(src))
		for i := 0; i < a; i++ {
			for j := 0; j < b; j++ {
				for k := 0; k < hw; k++ {
					want[(j*a+i)*hw+k] = src[(i*b+j)*hw+k]
				}
			}
		}
		dst := be.Alloc(len(src))
		be.Transpose3(a, b, hw, f32(be, src), dst)
		check("transpose3", dst, want)

		rows, C := 4, 3
		out, bias := randVec(rng, rows*C*hw), randVec(rng, C)
		out32 := f32(be, out)
		for i := range out {
			out[i] += bias[(i/hw)%C]
		}
		be.AddBias(rows, C, hw, f32(be, bias), out32)
		check("add bias", out32, out)

		srcStride, dstStride := C*hw+2, C+3
		rs := randVec(rng, rows*srcStride)
		sums := make([]float64, rows*dstStride)
		sums32 := f32(be, sums)
		for r := 0; r < rows; r++ {
			for c := 0; c < C; c++ {
				var s float64
				for k := 0; k < hw; k++ {
					s += rs[r*srcStride+c*hw+k]
				}
				sums[r*dstStride+c] = s
			}
		}
		be.RowSums(rows, C, hw, f32(be, rs), srcStride, sums32, dstStride)
		check("row sums", sums32, sums)

		g := models.ConvGeom{InC: 2, H: 8, W: 7, KH: 4, KW: 3, Stride: 3, PadT: 2, PadB: 1, PadL: 1, PadR: 0}
		g.OutH = (g.H+g.PadT+g.PadB-g.KH)/g.Stride + 1
		g.OutW = (g.W+g.PadL+g.PadR-g.KW)/g.Stride + 1
		outC, ckk, hwo, inN := 3, g.CKK(), g.HWo(), g.InC*g.H*g.W
		W := randVec(rng, outC*ckk)
		idx := []int{0, 17, -1, inN - 1, 40, 55}
		val := randVec(rng, len(idx))
		// Reference: the one-hot inputs through im2col and W·cols.
		onehot := func(r int) []float64 {
			cols := make([]float64, ckk*hwo)
			if idx[r] >= 0 {
				in := make([]float64, inN)
				in[idx[r]] = val[r]
				ref.Im2col(g, in, cols, hwo)
			}
			return cols
		}
		fwd := make([]float64, len(idx)*outC*hwo)
		for r := range idx {
			ref.Gemm(false, false, outC, hwo, ckk, 1, W, ckk, onehot(r), hwo, 0, fwd[r*outC*hwo:], hwo)
		}
		fwd32 := be.Alloc(len(fwd))
		be.SparseConvForward(g, outC, len(idx), idx, f32(be, val), f32(be, W), fwd32)
		check("sparse conv forward", fwd32, fwd)

		D := randVec(rng, outC*hwo)
		nW := outC*ckk + 5
		gw := randVec(rng, len(idx)*nW)
		gw32 := f32(be, gw)
		for j := range idx {
			ref.Gemm(false, true, outC, ckk, hwo, 1, D, hwo, onehot(j), hwo, 1, gw[j*nW:], ckk)
		}
		be.SparseConvGradScatter(g, outC, len(idx), idx, f32(be, val), f32(be, D), gw32, nW)
		check("sparse conv gradient scatter", gw32, gw)

		dIn, dOut := 11, 4
		Wd := randVec(rng, dOut*dIn)
		didx := []int{3, -1, 10, 0}
		dval := randVec(rng, len(didx))
		dfwd := make([]float64, len(didx)*dOut)
		for r, id := range didx {
			for j := 0; j < dOut && id >= 0; j++ {
				dfwd[r*dOut+j] = dval[r] * Wd[j*dIn+id]
			}
		}
		dfwd32 := be.Alloc(len(dfwd))
		be.SparseDenseForward(dIn, dOut, len(didx), didx, f32(be, dval), f32(be, Wd), dfwd32)
		check("sparse dense forward", dfwd32, dfwd)

		Dd := randVec(rng, dOut)
		dnW := dOut*dIn + 1
		dgw := randVec(rng, len(didx)*dnW)
		dgw32 := f32(be, dgw)
		for j, id := range didx {
			for o := 0; o < dOut && id >= 0; o++ {
				dgw[j*dnW+o*dIn+id] += dval[j] * Dd[o]
			}
		}
		be.SparseDenseGradScatter(dIn, dOut, len(didx), didx, f32(be, dval), f32(be, Dd), dgw32, dnW)
		check("sparse dense gradient scatter", dgw32, dgw)

		P := 1000
		xs, scale := randVec(rng, rows*P), randVec(rng, rows)
		acc := randVec(rng, P)
		wantAcc := append([]float64(nil), acc...)
		for r := 0; r < rows; r++ {
			for p := 0; p < P; p++ {
				wantAcc[p] += scale[r] * xs[r*P+p]
			}
		}
		be.ScaledRowSum(rows, P, scale, f32(be, xs), acc)
		for p := range acc {
			if math.Abs(acc[p]-wantAcc[p]) > 1e-9*(1+math.Abs(wantAcc[p])) {
				t.Fatalf("%s scaled row sum [%d] = %v, want %v", drv.Name(), p, acc[p], wantAcc[p])
			}
		}

		// The batched reductions: blocks of a row-major matrix and of a blocked
		// gradient-tangent buffer (kc directions per tensor).
		blocks := []int{0, 300, 310, 7, 400, 600}
		stride := 1000
		mx := randVec(rng, rows*stride)
		norms := randVec(rng, rows)
		wantN := append([]float64(nil), norms...)
		for r := 0; r < rows; r++ {
			for bi := 0; bi < len(blocks); bi += 2 {
				for i := 0; i < blocks[bi+1]; i++ {
					v := mx[r*stride+blocks[bi]+i]
					wantN[r] += v * v
				}
			}
		}
		be.RowSqNorms(rows, stride, blocks, f32(be, mx), norms)
		// cs samples of kc directions in the chunk's tensor-major layout: tensor
		// (o, z) of row s·kc + j at cs·kc·o + (s·kc + j)·z.
		cs, kc, nj := 3, 5, 4
		gv, tg := randVec(rng, cs*stride), randVec(rng, cs*kc*stride)
		gd, dd := make([]float64, cs*nj), make([]float64, cs*nj)
		be.BlockedDotSqBatch(f32(be, gv), stride, f32(be, tg), cs, kc, nj, blocks, gd, dd)
		for s := 0; s < cs; s++ {
			for j := 0; j < nj; j++ {
				var wgd, wdd float64
				for bi := 0; bi < len(blocks); bi += 2 {
					o, z := blocks[bi], blocks[bi+1]
					for i := 0; i < z; i++ {
						v := tg[cs*kc*o+(s*kc+j)*z+i]
						wgd += gv[s*stride+o+i] * v
						wdd += v * v
					}
				}
				q := s*nj + j
				if math.Abs(gd[q]-wgd) > 1e-9*(1+math.Abs(wgd)) || math.Abs(dd[q]-wdd) > 1e-9*wdd {
					t.Errorf("%s blocked dot sample %d direction %d: (%v, %v), want (%v, %v)", drv.Name(), s, j, gd[q], dd[q], wgd, wdd)
				}
			}
		}
		// A sample's row repeated for each of its directions.
		rep := randVec(rng, cs*7)
		rep32 := be.Alloc(cs * kc * 7)
		be.RepeatRows(cs*kc, kc, 7, f32(be, rep), rep32)
		wantRep := make([]float64, cs*kc*7)
		for r := 0; r < cs*kc; r++ {
			copy(wantRep[r*7:(r+1)*7], rep[(r/kc)*7:])
		}
		check("repeated rows", rep32, wantRep)
		for r := range norms {
			if math.Abs(norms[r]-wantN[r]) > 1e-9*math.Abs(wantN[r]) {
				t.Errorf("%s row squared norm %d = %v, want %v", drv.Name(), r, norms[r], wantN[r])
			}
		}
		if err := be.Err(); err != nil {
			t.Fatal(err)
		}
		be.Close()
	}
}

// TestEmulatorRefusesWhatCuBLASRefuses checks that the emulator applies the GPU
// driver's GEMM argument checks, so a call the GPU would refuse fails in CI too.
func TestEmulatorRefusesWhatCuBLASRefuses(t *testing.T) {
	be, err := NewBackend(NewEmulator())
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	a, b, c := be.Alloc(64), be.Alloc(64), be.Alloc(64)
	be.Gemm(false, false, 4, 4, 4, 1, a, 3, b, 4, 0, c, 4) // lda 3 < k = 4
	if err := be.Err(); err == nil || !strings.Contains(err.Error(), "lda") {
		t.Fatalf("lda < k: Err() = %v", err)
	}
	be2, err := NewBackend(NewEmulator())
	if err != nil {
		t.Fatal(err)
	}
	defer be2.Close()
	a, b, c = be2.Alloc(64), be2.Alloc(64), be2.Alloc(64)
	be2.GemmStridedBatched(false, false, 2, 2, 2, 1, a, 2, 4, b, 2, 4, 0, c, 2, 3, 2) // C matrices overlap
	if err := be2.Err(); err == nil || !strings.Contains(err.Error(), "overlap") {
		t.Fatalf("overlapping C: Err() = %v", err)
	}
}
