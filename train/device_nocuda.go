package train

import (
	"fmt"

	"github.com/dpfil/dpfil/models"
)

// newCUDAModel reports that dpfil has no CUDA backend yet (the engine's kernels sit
// behind models.Backend, which a CUDA backend will implement).
func newCUDAModel(arch models.Arch) (models.Model, error) {
	return nil, fmt.Errorf("device cuda: dpfil has no CUDA backend yet, so %s cannot run on a GPU; use --device cpu", arch.Name)
}
