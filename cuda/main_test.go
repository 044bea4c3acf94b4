package cuda

import (
	"fmt"
	"os"
	"testing"
)

// TestMain opens the GPU once for the whole test binary (a dpfil_cuda build; nothing
// in the default build), shares it with every test that does not test the driver's
// own life cycle (testDrivers, SharedTestDriver), and closes it at the end: a failed
// open or close fails the binary.
func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	closeGPU, err := openTestGPU()
	if err != nil {
		fmt.Fprintf(os.Stderr, "cuda build without a usable GPU: %v\n", err)
		return 1
	}
	code := m.Run()
	if err := closeGPU(); err != nil {
		fmt.Fprintf(os.Stderr, "close the shared test GPU: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// SharedTestDriver returns the driver a test runs device dev on ("cuda" or
// "cuda-emu", as OpenDriver): a fresh emulator, or the GPU TestMain opened, whose
// Close leaves it open.
func SharedTestDriver(dev string) (Driver, error) {
	if dev == "cuda" {
		if d := testGPU(); d != nil {
			return d, nil
		}
	}
	return OpenDriver(dev)
}
