package cuda

import (
	"errors"
	"testing"
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
