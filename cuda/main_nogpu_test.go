//go:build !dpfil_cuda

package cuda

// openTestGPU: the default build has no GPU to open.
func openTestGPU() (func() error, error) { return func() error { return nil }, nil }

// testGPU: none in the default build.
func testGPU() Driver { return nil }
