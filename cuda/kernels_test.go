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
		for _, n := range []int{1, 7, 1000, dotThread + 13, 3*dotThread + 1} {
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
}
