//go:build !cuda

package cuda

import "testing"

// gpuDrivers is empty without the cuda build tag: only the emulator runs.
func gpuDrivers(t *testing.T) []Driver { return nil }
