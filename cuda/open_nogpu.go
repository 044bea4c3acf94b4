//go:build !dpfil_cuda

package cuda

import "errors"

const hasGPU = false

// openGPU reports that this binary has no GPU support.
func openGPU() (Driver, error) {
	return nil, errors.New("cuda: this binary was built without GPU support; build bin/dpfil-cuda with `make cuda` (build tag dpfil_cuda) and run it on a GPU host")
}
