package cuda

import "fmt"

// OpenDriver opens a device by name: "cuda" is the first GPU (only in a binary built
// with the dpfil_cuda tag, see make cuda), "cuda-emu" the CPU emulator (for tests: correct
// but very slow; only in a binary built with cgo).
func OpenDriver(device string) (Driver, error) {
	switch device {
	case "cuda":
		return openGPU()
	case "cuda-emu":
		return openEmulator()
	}
	return nil, fmt.Errorf("cuda: unknown device %q (want cuda or cuda-emu)", device)
}

// HasGPU reports whether this binary was built with GPU support (the dpfil_cuda tag).
func HasGPU() bool { return hasGPU }
