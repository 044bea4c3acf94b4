//go:build dpfil_cuda

package train

import (
	"fmt"

	"github.com/dpfil/dpfil/cuda"
	"github.com/dpfil/dpfil/models"
)

// newCUDAModel builds arch on GPU 0.
func newCUDAModel(arch models.Arch) (models.Model, error) {
	drv, err := cuda.OpenDriver("cuda")
	if err != nil {
		return nil, fmt.Errorf("device cuda: %w", err)
	}
	m, err := cuda.Open(arch, drv)
	if err != nil {
		return nil, fmt.Errorf("device cuda: %w", err)
	}
	return m, nil
}
