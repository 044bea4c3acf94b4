//go:build dpfil_cuda

package cuda

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"
)

// TestGPUDriver checks the GPU driver itself on GPU 0 (a dpfil_cuda test binary runs
// only on a GPU host): managed memory, kernel launches and their argument checks, the
// row-major SGEMMs in true fp32 against float64, and Close.
func TestGPUDriver(t *testing.T) {
	d, err := OpenGPU(0)
	if err != nil {
		t.Fatal(err)
	}
	g := d.(*GPU)
	t.Logf("device: %s, cuBLAS from %s, peak FP32 %.0f GFLOP/s", g.Name(), g.CublasPath(), g.PeakFP32GFLOPs())
	if p := g.PeakFP32GFLOPs(); p < 0 || math.IsNaN(p) || (p == 0 && strings.Contains(g.Name(), "(sm_90)")) {
		t.Errorf("PeakFP32GFLOPs() = %g on %s", p, g.Name())
	}
	if !strings.Contains(g.Name(), "(sm_") || !strings.Contains(g.Name(), "cuBLAS ") {
		t.Errorf("Name() = %q, want the compute capability and the cuBLAS version", g.Name())
	}
	alloc := func(n int) []float32 {
		t.Helper()
		p, err := d.AllocManaged(4 * n)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := d.Free(p); err != nil && !strings.Contains(err.Error(), "closed") {
				t.Error(err)
			}
		})
		return unsafe.Slice((*float32)(p), n)
	}
	ptr := func(s []float32) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(s)) }
	r := rand.New(rand.NewPCG(7, 8))

	// Managed memory comes zeroed; a kernel reads and writes it.
	const n = 100_003
	x, y := alloc(n), alloc(n)
	for i := range x {
		if x[i] != 0 || y[i] != 0 {
			t.Fatalf("AllocManaged memory not zeroed at %d", i)
		}
		x[i] = float32(4 * r.NormFloat64())
	}
	if err := d.Launch("k_act_fwd", Dim3{64, 1, 1}, Dim3{256, 1, 1}, Args(0, n, ptr(x), ptr(y))); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	for i := range x {
		if want := math.Tanh(float64(x[i])); math.Abs(float64(y[i])-want) > 1e-6 {
			t.Fatalf("tanh(%g) = %g on the GPU, want %g", x[i], y[i], want)
		}
	}

	// A negative element count is a valid launch that does nothing (the grid-stride
	// loop's bound is the kernel's 32-bit int: a sign-extended 64-bit slot would be a
	// different argument, which the stand-in driver refuses).
	before := x[5]
	if err := d.Launch("k_zero", Dim3{1, 1, 1}, Dim3{32, 1, 1}, Args(-5, ptr(x))); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	if x[5] != before {
		t.Fatalf("k_zero with n = -5 wrote x[5] = %v", x[5])
	}

	// Launches the PTX does not allow fail before reaching the device.
	for _, bad := range []struct {
		name string
		args []uint64
		want string
	}{
		{"k_act_fwd", Args(0, n, ptr(x)), "takes 4 arguments, got 3"},
		{"k_nope", nil, "no such kernel"},
	} {
		if err := d.Launch(bad.name, Dim3{1, 1, 1}, Dim3{1, 1, 1}, bad.args); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Launch(%s): %v, want an error mentioning %q", bad.name, err, bad.want)
		}
	}
	if _, err := d.AllocManaged(1 << 55); err == nil || !strings.Contains(err.Error(), "free") {
		t.Errorf("AllocManaged(32 PiB) = %v, want a refusal naming the free memory", err)
	}

	// SGEMM in all four transpose combinations, k large enough that TF32 (10-bit
	// mantissa) would miss the bound by orders of magnitude.
	const m, nn, k = 67, 45, 512
	for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
		lda, ldb, ldc := k+3, nn+1, nn+2
		if tr[0] {
			lda = m + 3
		}
		if tr[1] {
			ldb = k + 1
		}
		rowsA, rowsB := m, k // as stored
		if tr[0] {
			rowsA = k
		}
		if tr[1] {
			rowsB = nn
		}
		a, b, c := alloc(rowsA*lda), alloc(rowsB*ldb), alloc(m*ldc)
		for _, s := range [][]float32{a, b, c} {
			for i := range s {
				s[i] = float32(r.NormFloat64())
			}
		}
		want := refRowMajor(tr[0], tr[1], m, nn, k, 0.75, a, lda, b, ldb, -0.5, c, ldc)
		absA, absB := make([]float32, len(a)), make([]float32, len(b))
		for i := range a {
			absA[i] = float32(math.Abs(float64(a[i])))
		}
		for i := range b {
			absB[i] = float32(math.Abs(float64(b[i])))
		}
		scale := refRowMajor(tr[0], tr[1], m, nn, k, 1, absA, lda, absB, ldb, 0, make([]float32, m*ldc), ldc)
		if err := d.Sgemm(tr[0], tr[1], m, nn, k, 0.75, ptr(a), lda, ptr(b), ldb, -0.5, ptr(c), ldc); err != nil {
			t.Fatal(err)
		}
		if err := d.Sync(); err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for i := 0; i < m; i++ {
			for j := 0; j < nn; j++ {
				e := math.Abs(float64(c[i*ldc+j])-want[i*ldc+j]) / (1 + scale[i*ldc+j])
				worst = max(worst, e)
			}
		}
		if worst > 1e-5 {
			t.Errorf("Sgemm trans %v: error %.3g of Σ|a||b| (TF32 would give ~1e-3)", tr, worst)
		}

		// The same as a strided batch of 3 sharing A.
		const batch = 3
		strideB, strideC := len(b), m*ldc
		bs, cs := alloc(batch*strideB), alloc(batch*strideC)
		for i := 0; i < batch; i++ {
			copy(bs[i*strideB:], b)
			for j := range want {
				cs[i*strideC+j] = float32(i)
			}
		}
		if err := g.SgemmStridedBatched(tr[0], tr[1], m, nn, k, 1, ptr(a), lda, 0, ptr(bs), ldb, strideB, 1, ptr(cs), ldc, strideC, batch); err != nil {
			t.Fatal(err)
		}
		if err := d.Sync(); err != nil {
			t.Fatal(err)
		}
		ab := refRowMajor(tr[0], tr[1], m, nn, k, 1, a, lda, b, ldb, 0, make([]float32, m*ldc), ldc)
		for i := 0; i < batch; i++ {
			for p := 0; p < m; p++ {
				for q := 0; q < nn; q++ {
					j := p*ldc + q
					if e := math.Abs(float64(cs[i*strideC+j])-(ab[j]+float64(i))) / (1 + scale[j]); e > 1e-5 {
						t.Fatalf("SgemmStridedBatched trans %v item %d (%d,%d): error %.3g", tr, i, p, q, e)
					}
				}
			}
		}
	}

	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := d.AllocManaged(4); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("AllocManaged after Close: %v", err)
	}
}

// TestGPUJITErrorLog: a module the driver's JIT rejects fails with the JIT's error
// log in the error (here the PTX of k_act_fwd lacks its last parameter declaration,
// which its body reads).
func TestGPUJITErrorLog(t *testing.T) {
	const whole = ",\n\t.param .u64 k_act_fwd_param_3\n)"
	if !strings.Contains(ptxModule, whole) {
		t.Fatal("the embedded PTX does not declare k_act_fwd's parameter 3 as expected")
	}
	bad := strings.Replace(ptxModule, whole, "\n)", 1)
	leave, err := theTestGPU.enter("test")
	if err != nil {
		t.Fatal(err)
	}
	defer leave()
	mod, err := loadPTX(bad)
	if err == nil {
		_ = mod.Unload()
		t.Fatal("the driver loaded PTX whose k_act_fwd reads an undeclared parameter")
	}
	if !strings.Contains(err.Error(), "JIT error log:") || !strings.Contains(err.Error(), "k_act_fwd") {
		t.Fatalf("error without the JIT's reason: %v", err)
	}
	t.Logf("rejected as expected: %v", err)
}

// ExampleOpenGPU shows the driver's life cycle (it needs a GPU, so it is compiled but
// not run).
func ExampleOpenGPU() {
	d, err := OpenGPU(0)
	if err != nil {
		panic(err)
	}
	defer d.Close()
	const n = 1024
	x, _ := d.AllocManaged(4 * n) // zeroed, host- and device-addressable
	y, _ := d.AllocManaged(4 * n)
	z, _ := d.AllocManaged(4 * n)
	// y = tanh(x) elementwise, then z = x·yᵀ for x, y viewed as 32×32 row-major.
	_ = d.Launch("k_act_fwd", Dim3{X: 4, Y: 1, Z: 1}, Dim3{X: 256, Y: 1, Z: 1}, Args(0, n, x, y))
	_ = d.Sgemm(false, true, 32, 32, 32, 1, x, 32, y, 32, 0, z, 32)
	_ = d.Sync() // now the host may read z
	for _, p := range []unsafe.Pointer{x, y, z} {
		_ = d.Free(p)
	}
}
