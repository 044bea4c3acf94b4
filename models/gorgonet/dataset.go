package gorgonet

import (
	"fmt"

	"gorgonia.org/tensor"

	"github.com/dpfil/dpfil/data"
)

// DatasetTensor returns the images of d as a (N, C, H, W) float32 tensor.Dense that
// views d.Images (no copy: writing one writes the other).
func DatasetTensor(d *data.Dataset) *tensor.Dense {
	return tensor.New(tensor.WithShape(d.N, d.C, d.H, d.W), tensor.WithBacking(d.Images))
}

// DatasetFromTensor makes a dataset of a (N, C, H, W) float32 tensor with values in [0,1]
// and its labels (0 ≤ label < classes). The images view the tensor's backing array
// (no copy) when the tensor is contiguous, and are copied otherwise.
func DatasetFromTensor(name string, x *tensor.Dense, labels []int, classes int) (*data.Dataset, error) {
	if x == nil {
		return nil, fmt.Errorf("dataset %s: nil tensor", name)
	}
	sh := x.Shape()
	if len(sh) != 4 {
		return nil, fmt.Errorf("dataset %s: tensor shape %v, want (N, C, H, W)", name, sh)
	}
	if x.Dtype() != tensor.Float32 {
		return nil, fmt.Errorf("dataset %s: tensor of %v, want float32", name, x.Dtype())
	}
	var imgs []float32
	if x.DataOrder().IsRowMajor() && !x.IsView() {
		imgs = x.Data().([]float32)
	} else {
		imgs = x.Materialize().Data().([]float32)
	}
	d := &data.Dataset{Name: name, Source: "tensor", N: sh[0], C: sh[1], H: sh[2], W: sh[3], Classes: classes, Images: imgs, Labels: labels}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	d.SHA256 = d.Fingerprint()
	return d, nil
}
