//go:build dpfil_cuda

package cuda

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"gorgonia.org/cu"
)

// onStandin reports whether GPU 0 is the stand-in driver of cuda/standin (CI without
// a GPU) rather than an NVIDIA GPU.
func onStandin(t *testing.T) bool {
	t.Helper()
	dev, err := cu.GetDevice(0)
	if err != nil {
		t.Fatal(err)
	}
	name, err := dev.Name()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(name, "dpfil stand-in")
}

// standinScenarios are GPU-only bugs, each done once on purpose, with what the
// stand-in must say about it. Each runs in a child process (TestStandinScenario):
// most crash the process or leave the context in a sticky error, as on a GPU.
var standinScenarios = []struct {
	name   string
	want   []string
	checks bool // needs the stand-in's kernel checks (off with DPFIL_STANDIN_CHECKS=0)
}{
	// The host reads a kernel's output before Sync: its memory is PROT_NONE while the
	// launch is queued, so the read faults at this file's line.
	{"host-read-before-sync", []string{"unexpected fault address", "standin_test.go"}, false},
	// The same for a GEMM's output (the stand-in's cuBLAS is stream-ordered too).
	{"host-read-before-sync-gemm", []string{"unexpected fault address", "standin_test.go"}, false},
	// A kernel stores one element past the end of its buffer.
	{"out-of-bounds-store", []string{"memcheck: kernel k_zero", "0 bytes past the end of allocation", "caught: cuda: sync: IllegalAddress"}, true},
	// Two threads of one launch write one word (a duplicated grid dimension).
	{"race-write-write", []string{"race: kernel k_zero", "was written by thread", "caught: cuda: sync: LaunchFailed"}, true},
	// A thread writes a word that another thread of the launch reads (aliased operands).
	{"race-read-write", []string{"race: kernel k_add_bias", "caught: cuda: sync"}, true},
	// A Go pointer as a kernel argument, and as a GEMM operand.
	{"go-pointer-kernel", []string{"argument 1 (float* x) is not device memory", "caught: cuda: launch k_zero"}, false},
	{"go-pointer-gemm", []string{"is not inside one live device allocation", "caught: cuda: cublasSgemm"}, false},
	// A 64-bit value in the slot of a 32-bit int parameter.
	{"int-upper-bits", []string{"upper 4 are not 0", "caught: cuda: launch k_zero"}, false},
	// A driver call from an OS thread without a current context.
	{"no-context", []string{"no current context on this OS thread", "caught: InvalidContext"}, false},
	// A kernel argument into memory that was freed.
	{"use-after-free", []string{"which was freed", "caught: cuda: launch k_zero"}, false},
	// Work on the legacy default stream while the driver has its own stream.
	{"legacy-stream", []string{"work on the legacy default stream while the context has a stream of its own", "caught:"}, false},
	// A wait while the stream captures a graph.
	{"sync-in-capture", []string{"a synchronisation while stream", "caught: cuda: sync"}, false},
	// A captured copy from pageable host memory (the graph would read reused bytes).
	{"pageable-in-capture", []string{"a copy from pageable host memory while stream", "caught:"}, false},
	// A graph launched after a buffer it uses was freed.
	{"graph-freed-buffer", []string{"freed since the capture", "caught: cuda: cuGraphLaunch"}, false},
	// The host reads a graph's output before the graph ran (a Sync): the graph's
	// buffers are PROT_NONE while it is queued.
	{"graph-host-read", []string{"unexpected fault address", "standin_test.go"}, false},
}

// TestStandinCatches runs every scenario of standinScenarios in a child process and
// checks that it fails, saying what the stand-in must say. Skipped on a real GPU.
func TestStandinCatches(t *testing.T) {
	if !onStandin(t) {
		t.Skip("GPU 0 is not the stand-in driver: these bugs are not caught the same way on a GPU")
	}
	checks := os.Getenv("DPFIL_STANDIN_CHECKS") != "0" && os.Getenv("DPFIL_STANDIN_CHECKS") != "off"
	for _, sc := range standinScenarios {
		t.Run(sc.name, func(t *testing.T) {
			if sc.checks && !checks {
				t.Skip("needs the stand-in's kernel checks (DPFIL_STANDIN_CHECKS=0)")
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestStandinScenario$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), "DPFIL_STANDIN_SCENARIO="+sc.name, "DPFIL_STANDIN_QUIET=1", "GOTRACEBACK=single")
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("the scenario did not fail (%v):\n%s", err, out)
			}
			for _, w := range sc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("the output does not say %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestStandinScenario does one scenario of standinScenarios (named by
// $DPFIL_STANDIN_SCENARIO; skipped without it) and reports what was caught.
func TestStandinScenario(t *testing.T) {
	name := os.Getenv("DPFIL_STANDIN_SCENARIO")
	if name == "" {
		t.Skip("run by TestStandinCatches")
	}
	d, err := OpenGPU(0)
	if err != nil {
		t.Fatal(err)
	}
	alloc := func(n int) []float32 {
		p, err := d.AllocManaged(4 * n)
		if err != nil {
			t.Fatal(err)
		}
		return unsafe.Slice((*float32)(p), n)
	}
	ptr := func(s []float32) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(s)) }
	caught := func(err error) {
		if err == nil {
			t.Fatal("nothing was caught")
		}
		t.Fatalf("caught: %v", err)
	}
	launchAndSync := func(name string, grid, block Dim3, args []uint64) {
		if err := d.Launch(name, grid, block, args); err != nil {
			caught(err)
		}
		caught(d.Sync())
	}
	x, y := alloc(100), alloc(100)
	switch name {
	case "host-read-before-sync":
		if err := d.Launch("k_act_fwd", Dim3{1, 1, 1}, Dim3{128, 1, 1}, Args(0, 100, ptr(x), ptr(y))); err != nil {
			t.Fatal(err)
		}
		t.Logf("y[0] = %v", y[0]) // no Sync: faults
	case "host-read-before-sync-gemm":
		c := alloc(100)
		if err := d.Sgemm(false, false, 10, 10, 10, 1, ptr(x), 10, ptr(y), 10, 0, ptr(c), 10); err != nil {
			t.Fatal(err)
		}
		t.Logf("C[0] = %v", c[0]) // no Sync: faults
	case "out-of-bounds-store":
		launchAndSync("k_zero", Dim3{1, 1, 1}, Dim3{128, 1, 1}, Args(101, ptr(x)))
	case "race-write-write":
		launchAndSync("k_zero", Dim3{1, 2, 1}, Dim3{128, 1, 1}, Args(100, ptr(x)))
	case "race-read-write":
		// out[t] += bias[(t/hw)%C] with bias = out: thread 0 writes out[0], which the
		// threads of channel 0 read.
		launchAndSync("k_add_bias", Dim3{1, 1, 1}, Dim3{128, 1, 1}, Args(1, 4, 25, ptr(x), ptr(x)))
	case "go-pointer-kernel":
		host := make([]float32, 100)
		launchAndSync("k_zero", Dim3{1, 1, 1}, Dim3{128, 1, 1}, Args(100, ptr(host)))
	case "go-pointer-gemm":
		host := make([]float32, 100)
		caught(d.Sgemm(false, false, 10, 10, 10, 1, ptr(x), 10, ptr(host), 10, 0, ptr(y), 10))
	case "int-upper-bits":
		launchAndSync("k_zero", Dim3{1, 1, 1}, Dim3{128, 1, 1}, []uint64{1<<32 | 100, Arg(ptr(x))})
	case "no-context":
		runtime.LockOSThread()
		if err := cu.SetCurrentContext(cu.CUContext{}); err != nil {
			t.Fatal(err)
		}
		_, _, err := cu.MemInfo()
		caught(err)
	case "use-after-free":
		if err := d.Free(ptr(y)); err != nil {
			t.Fatal(err)
		}
		launchAndSync("k_zero", Dim3{1, 1, 1}, Dim3{128, 1, 1}, Args(100, ptr(y)))
	case "legacy-stream":
		g := d.(*GPU)
		leave, err := g.enter("test")
		if err != nil {
			t.Fatal(err)
		}
		fn, err := g.function("k_zero")
		if err != nil {
			t.Fatal(err)
		}
		args := Args(100, ptr(x))
		caught(fn.Launch(1, 1, 1, 128, 1, 1, 0, cu.NoStream, []unsafe.Pointer{unsafe.Pointer(&args[0]), unsafe.Pointer(&args[1])}))
		leave()
	case "sync-in-capture":
		if err := d.BeginCapture(); err != nil {
			t.Fatal(err)
		}
		caught(d.Sync())
	case "pageable-in-capture":
		g := d.(*GPU)
		if err := d.BeginCapture(); err != nil {
			t.Fatal(err)
		}
		leave, err := g.enter("test")
		if err != nil {
			t.Fatal(err)
		}
		host := make([]float32, 100)
		caught(cu.MemcpyHtoDAsync(cu.DevicePtr(uintptr(ptr(x))), ptr(host), 400, g.stream))
		leave()
	case "graph-freed-buffer", "graph-host-read":
		if err := d.BeginCapture(); err != nil {
			t.Fatal(err)
		}
		if err := d.Launch("k_act_fwd", Dim3{1, 1, 1}, Dim3{128, 1, 1}, Args(0, 100, ptr(x), ptr(y))); err != nil {
			t.Fatal(err)
		}
		gr, err := d.EndCapture()
		if err != nil {
			t.Fatal(err)
		}
		if name == "graph-freed-buffer" {
			if err := d.Free(ptr(y)); err != nil {
				t.Fatal(err)
			}
			caught(d.LaunchGraph(gr))
		}
		if err := d.LaunchGraph(gr); err != nil {
			t.Fatal(err)
		}
		t.Logf("y[0] = %v", y[0]) // no Sync: faults
	default:
		t.Fatalf("unknown scenario %q", name)
	}
	t.Fatal("the scenario ran to its end: nothing was caught")
}

// TestStandinPTXChecks: the stand-in refuses PTX that it cannot honestly stand in for,
// each time with the reason in the JIT error log. Skipped on a real GPU.
func TestStandinPTXChecks(t *testing.T) {
	if !onStandin(t) {
		t.Skip("GPU 0 is not the stand-in driver")
	}
	leave, err := theTestGPU.enter("test")
	if err != nil {
		t.Fatal(err)
	}
	defer leave()
	for _, tc := range []struct{ old, new, want string }{
		{".target sm_75", ".target sm_99", ".target sm_99 is newer than the device"},
		{".version 7.8", ".version 9.9", "newer than this driver"},
		{".address_size 64", "", "no .address_size 64"},
		{".entry k_act_fwd(", ".entry k_act_fwd_v2(", "PTX entry k_act_fwd_v2 has no kernel of that name in dpfil.cu"},
		{".param .u32 k_act_fwd_param_1", ".param .u64 k_act_fwd_param_1", "parameter 1 is 8 bytes, but dpfil.cu's is 4 (int n)"},
	} {
		if !strings.Contains(ptxModule, tc.old) {
			t.Fatalf("the embedded PTX has no %q", tc.old)
		}
		mod, err := loadPTX(strings.Replace(ptxModule, tc.old, tc.new, 1))
		if err == nil {
			_ = mod.Unload()
			t.Errorf("%q → %q: loaded", tc.old, tc.new)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q → %q: %v; want a JIT log saying %q", tc.old, tc.new, err, tc.want)
		}
	}
}
