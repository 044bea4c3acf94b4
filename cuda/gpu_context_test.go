//go:build dpfil_cuda

package cuda

import (
	"errors"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"gorgonia.org/cu"
)

// TestGPUReopen opens and closes GPU 0 again and again while the test binary's
// shared GPU stays open, and once while it is the only one, running an SGEMM and a
// kernel in each (cuBLAS is created anew each time, in the same primary context):
// open/close/open must work, and no Close may take the context from under cuBLAS.
func TestGPUReopen(t *testing.T) {
	use := func(d Driver) {
		t.Helper()
		p, err := d.Alloc(4 * 3 * 4)
		if err != nil {
			t.Fatal(err)
		}
		host := []float32{1, 2, 3, 4}
		a, b, c := p, unsafe.Add(p, 16), unsafe.Add(p, 32)
		for _, q := range []unsafe.Pointer{a, b} {
			if err := d.CopyHtoD(q, unsafe.Pointer(&host[0]), 16); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Sgemm(false, false, 2, 2, 2, 1, a, 2, b, 2, 0, c, 2); err != nil {
			t.Fatal(err)
		}
		if err := d.Launch("k_zero", Dim3{1, 1, 1}, Dim3{128, 1, 1}, Args(1, a)); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, 4)
		if err := d.CopyDtoH(unsafe.Pointer(&got[0]), c, 16); err != nil {
			t.Fatal(err)
		}
		if want := []float32{7, 10, 15, 22}; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] {
			t.Fatalf("C = %v, want %v", got, want)
		}
		if err := d.Free(p); err != nil {
			t.Fatal(err)
		}
	}
	for round := 0; round < 3; round++ {
		d, err := OpenGPU(0)
		if err != nil {
			t.Fatalf("open %d: %v", round, err)
		}
		use(d)
		if err := d.Close(); err != nil {
			t.Fatalf("close %d: %v", round, err)
		}
		use(testGPU()) // the shared one is unaffected
	}
}

// TestGPUContextRetainedOnce runs TestGPUReopen in a child process on the stand-in,
// which counts the primary context's retains and releases (DPFIL_STANDIN_CTXSTATS)
// and whose cuBLAS refuses to run once the context it adopted was destroyed: one
// retain for the whole process, no release, no complaint. Skipped on a real GPU
// (TestGPUReopen runs there directly).
func TestGPUContextRetainedOnce(t *testing.T) {
	if !onStandin(t) {
		t.Skip("GPU 0 is not the stand-in driver")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestGPUReopen$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "DPFIL_STANDIN_CTXSTATS=1", "DPFIL_STANDIN_QUIET=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("TestGPUReopen in a child: %v\n%s", err, out)
	}
	all := regexp.MustCompile(`primary context: (\d+) retain\(s\), (\d+) release\(s\)`).FindAllStringSubmatch(string(out), -1)
	if all == nil {
		t.Fatalf("the stand-in printed no context counts:\n%s", out)
	}
	m := all[len(all)-1] // the counts after the last retain or release
	if m[1] != "1" || m[2] != "0" {
		t.Errorf("the primary context was retained %s and released %s times, want 1 and 0:\n%s", m[1], m[2], out)
	}
	if strings.Contains(string(out), "stand-in cuBLAS") {
		t.Errorf("the stand-in cuBLAS complained:\n%s", out)
	}
}

// TestStandinCatchesContextReleasedUnderCublas: the stand-in's cuBLAS catches what
// Close did before the context was retained once per process — release the primary
// context (destroying it) after cuBLAS adopted it, then retain a new one and create a
// cuBLAS handle there. Done in a child process (the context is gone afterwards).
func TestStandinCatchesContextReleasedUnderCublas(t *testing.T) {
	if !onStandin(t) {
		t.Skip("GPU 0 is not the stand-in driver")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestStandinReleaseUnderCublasChild$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "DPFIL_STANDIN_RELEASE_CHILD=1", "DPFIL_STANDIN_QUIET=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("the child did not fail (%v):\n%s", err, out)
	}
	for _, w := range []string{"cublasCreate after the context cuBLAS adopted", "caught: ", "cublasCreate: "} {
		if !strings.Contains(string(out), w) {
			t.Errorf("the output does not say %q:\n%s", w, out)
		}
	}
}

// TestStandinReleaseUnderCublasChild is the child of
// TestStandinCatchesContextReleasedUnderCublas (skipped without its variable).
func TestStandinReleaseUnderCublasChild(t *testing.T) {
	if os.Getenv("DPFIL_STANDIN_RELEASE_CHILD") != "1" {
		t.Skip("run by TestStandinCatchesContextReleasedUnderCublas")
	}
	// cuBLAS adopted the primary context when TestMain opened the GPU; release the
	// process's one retain, which destroys it.
	g := theTestGPU
	if err := g.dev.ReleasePrimaryCtx(); err != nil {
		t.Fatal(err)
	}
	ctx, err := g.dev.RetainPrimaryCtx() // a new primary context
	if err != nil {
		t.Fatal(err)
	}
	runtime.LockOSThread() // the child ends with this test
	if err := cu.SetCurrentContext(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := openCublas(); err != nil {
		t.Fatalf("caught: %v", err)
	}
	t.Fatal("cuBLAS was created after the context it adopted was destroyed: nothing was caught")
}
