package cuda

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unsafe"
)

// TestGraphReplayChecksWork: a graphed call runs directly, is captured, then replayed
// with the same results; a replay whose work differs from the capture in a scalar
// argument (here k_zero's count, which the key leaves out on purpose) fails instead
// of silently running the captured value.
func TestGraphReplayChecksWork(t *testing.T) {
	be, err := NewDeviceBackend(NewEmulator())
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	x := be.Alloc(64)
	ones := make([]float32, 64)
	out := make([]float32, 64)
	call := func(n int) error {
		for i := range ones {
			ones[i] = 1
		}
		be.Copy(x, ones) // outside the graph
		return be.graphCall("zero", func() error {
			be.Zero(x[:n])
			be.Copy(out, x)
			return be.Err()
		})
	}
	for i := 0; i < 4; i++ {
		before := be.Counts()
		if err := call(48); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		c := be.Counts().Sub(before)
		for j, v := range out {
			if want := float32(0); j >= 48 {
				want = 1
				if v != want {
					t.Fatalf("call %d: out[%d] = %v, want %v", i, j, v, want)
				}
			} else if v != want {
				t.Fatalf("call %d: out[%d] = %v, want %v", i, j, v, want)
			}
		}
		wantGraphs := int64(0)
		if i >= 1 {
			wantGraphs = 1
		}
		if c.GraphLaunches != wantGraphs || c.Launches != 1 {
			t.Errorf("call %d: %d graph launches (want %d), %d kernel launches (want 1)", i, c.GraphLaunches, wantGraphs, c.Launches)
		}
	}
	err = call(32)
	if !errors.Is(err, errGraphMismatch) {
		t.Fatalf("a replay with another count: %v, want %v", err, errGraphMismatch)
	}
}

// TestEmulatorCaptureCopies: while a graph is captured, the emulator refuses the
// copies that must happen at once (from pageable host memory, to the host), naming
// them, and records the queued ones (device to device, pinned, async), which run
// only when the graph is launched.
func TestEmulatorCaptureCopies(t *testing.T) {
	d := NewEmulator()
	const n = 16
	a, err := d.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(a)
	b, err := d.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(b)
	host := make([]byte, n)
	for i := range host {
		host[i] = byte(i + 1)
	}
	if err := d.CopyHtoD(a, unsafe.Pointer(&host[0]), n); err != nil {
		t.Fatal(err)
	}
	if err := d.BeginCapture(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		what string
		err  error
	}{
		{"a copy from pageable host memory", d.CopyHtoD(a, unsafe.Pointer(&host[0]), n)},
		{"a copy to the host (a wait)", d.CopyDtoH(unsafe.Pointer(&host[0]), a, n)},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.what+" while capturing a graph") {
			t.Errorf("%s during a capture: %v", tc.what, tc.err)
		}
	}
	if err := d.CopyDtoD(b, a, n); err != nil {
		t.Fatal(err)
	}
	g, err := d.EndCapture()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]byte, n)
	if err := d.CopyDtoH(unsafe.Pointer(&out[0]), b, n); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(out, host) {
		t.Fatalf("the captured copy ran before its graph: %v", out)
	}
	if err := d.LaunchGraph(g); err != nil {
		t.Fatal(err)
	}
	if err := d.CopyDtoH(unsafe.Pointer(&out[0]), b, n); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, host) {
		t.Fatalf("after the graph: %v, want %v", out, host)
	}
	if err := d.DestroyGraph(g); err != nil {
		t.Fatal(err)
	}
	if err := d.DestroyGraph(g); err == nil || !strings.Contains(err.Error(), "unknown") {
		t.Errorf("a graph destroyed twice: %v", err)
	}
}

// TestEmulatorAlloc: device memory comes poisoned (0xff bytes, as cuMemAlloc does
// not zero it), managed and host memory zeroed, and a size ≤ 0 is refused, naming
// the kind of memory.
func TestEmulatorAlloc(t *testing.T) {
	d := NewEmulator()
	const n = 8
	for _, tc := range []struct {
		name  string
		alloc func(int) (unsafe.Pointer, error)
		free  func(unsafe.Pointer) error
		fill  byte
		bad   string
	}{
		{"device", d.Alloc, d.Free, 0xff, "cuda emulator: allocate 0 bytes"},
		{"managed", d.AllocManaged, d.Free, 0, "cuda emulator: allocate 0 bytes"},
		{"host", d.AllocHost, d.FreeHost, 0, "cuda emulator: allocate 0 host bytes"},
	} {
		p, err := tc.alloc(n)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := unsafe.Slice((*byte)(p), n); !bytes.Equal(got, bytes.Repeat([]byte{tc.fill}, n)) {
			t.Errorf("%s memory starts as %v, want bytes %#x", tc.name, got, tc.fill)
		}
		if err := tc.free(p); err != nil {
			t.Fatal(err)
		}
		if _, err := tc.alloc(0); err == nil || err.Error() != tc.bad {
			t.Errorf("%s of 0 bytes: %v, want %q", tc.name, err, tc.bad)
		}
	}
}
