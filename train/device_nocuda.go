package train

import (
	"fmt"

	"github.com/dpfil/dpfil/models"
)

// newCUDAModel reports that this binary has no CUDA support.
func newCUDAModel(arch models.Arch) (models.Model, error) {
	return nil, fmt.Errorf("device cuda: this dpfil binary was built without CUDA support (rebuild with `go build -tags cuda` on a machine with an NVIDIA GPU), or use --device cpu")
}
