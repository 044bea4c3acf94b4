//go:build !dpfil_cuda

package train

import (
	"fmt"

	"github.com/dpfil/dpfil/models"
)

// newCUDAModel reports that this binary has no GPU support: the cuda backend is
// compiled only with the dpfil_cuda build tag (make cuda builds bin/dpfil-cuda).
func newCUDAModel(arch models.Arch, _ bool) (models.Model, error) {
	return nil, fmt.Errorf("device cuda: this dpfil binary was built without GPU support, so %s cannot run on a GPU; build bin/dpfil-cuda with `make cuda` (see README, CUDA) or use --device cpu", arch.Name)
}
