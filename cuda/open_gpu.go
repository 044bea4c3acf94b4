//go:build dpfil_cuda

package cuda

const hasGPU = true

// openGPU opens GPU 0.
func openGPU() (Driver, error) { return OpenGPU(0) }
