package cuda

import (
	"testing"

	"github.com/dpfil/dpfil/models"
)

// testDrivers returns the drivers this test binary can run: the emulator always, and
// the GPU too when built with -tags cuda (where a missing GPU fails the test).
func testDrivers(t *testing.T) []Driver {
	t.Helper()
	drivers := []Driver{NewEmulator()}
	if HasGPU() {
		gpu, err := OpenDriver("cuda")
		if err != nil {
			t.Fatalf("cuda build without a usable GPU: %v", err)
		}
		drivers = append(drivers, gpu)
	}
	return drivers
}

// TestConformance runs the engine's backend conformance suite (logits, per-sample
// gradients, clipped sums, tangents, input gradients of clipped dots, FIL norms on
// every architecture) against the float64 CPU reference.
func TestConformance(t *testing.T) {
	for _, drv := range testDrivers(t) {
		t.Run(drv.Name(), func(t *testing.T) {
			be, err := NewBackend(drv)
			if err != nil {
				t.Fatal(err)
			}
			defer be.Close()
			if err := models.CheckBackend(be, 1e-4); err != nil {
				t.Fatal(err)
			}
			if err := be.Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
