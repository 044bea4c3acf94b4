//go:build dpfil_cuda

package train

import (
	"fmt"

	"github.com/dpfil/dpfil/cuda"
	"github.com/dpfil/dpfil/models"
)

// newCUDAModel builds arch on GPU 0: on plain device memory (cuda.Open), or managed
// memory when asked.
func newCUDAModel(arch models.Arch, managed bool) (models.Model, error) {
	drv, err := cuda.OpenDriver("cuda")
	if err != nil {
		return nil, fmt.Errorf("device cuda: %w", err)
	}
	open := cuda.Open
	if managed {
		open = cuda.OpenManaged
	}
	m, err := open(arch, drv)
	if err != nil {
		return nil, fmt.Errorf("device cuda: %w", err)
	}
	return m, nil
}
