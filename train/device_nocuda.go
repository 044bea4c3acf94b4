package train

import (
	"fmt"

	"github.com/dpfil/dpfil/models"
)

// newCUDAModel reports that this binary has no CUDA backend for the trainer.
func newCUDAModel(arch models.Arch) (models.Model, error) {
	return nil, fmt.Errorf("device cuda: this dpfil binary has no CUDA backend for %s (build it with -tags cuda on a machine with an NVIDIA GPU); use --device cpu", arch.Name)
}
