//go:build dpfil_cuda

package cuda

// sharedGPU is the GPU TestMain opened, as the tests get it: every *GPU method, but
// Close leaves the device open for the next test.
type sharedGPU struct{ *GPU }

func (sharedGPU) Close() error { return nil }

var theTestGPU *GPU

// openTestGPU opens GPU 0 for the test binary and returns how to close it.
func openTestGPU() (func() error, error) {
	d, err := OpenGPU(0)
	if err != nil {
		return nil, err
	}
	theTestGPU = d.(*GPU)
	return d.Close, nil
}

// testGPU is the shared GPU.
func testGPU() Driver { return sharedGPU{theTestGPU} }
