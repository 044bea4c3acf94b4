package gorgonet

import (
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/dpfil/dpfil/data"
)

// TestDatasetTensor: the tensor is a (N, C, H, W) view of the images, and
// DatasetFromTensor gives the dataset back (same fingerprint, no copy of a
// contiguous tensor, a copy of a strided view); bad tensors are refused.
func TestDatasetTensor(t *testing.T) {
	const n, c, h, w = 4, 2, 3, 5
	imgs := make([]float32, n*c*h*w)
	for i := range imgs {
		imgs[i] = float32(i%7) / 7
	}
	d := &data.Dataset{Name: "t", N: n, C: c, H: h, W: w, Classes: 3, Images: imgs, Labels: []int{0, 1, 2, 1}}
	d.SHA256 = d.Fingerprint()

	tt := DatasetTensor(d)
	if !tt.Shape().Eq(tensor.Shape{n, c, h, w}) || &tt.Data().([]float32)[0] != &d.Images[0] {
		t.Fatal("DatasetTensor is not a (N, C, H, W) view of the images")
	}
	back, err := DatasetFromTensor("t", tt, d.Labels, d.Classes)
	if err != nil {
		t.Fatal(err)
	}
	if &back.Images[0] != &d.Images[0] || back.SHA256 != d.SHA256 || back.Source != "tensor" {
		t.Errorf("round trip: shares images %v, sha %s vs %s, source %q", &back.Images[0] == &d.Images[0], back.SHA256, d.SHA256, back.Source)
	}

	// A strided view (the last two samples) is copied into a contiguous slice.
	view, err := tt.Slice(tensor.S(2, 4))
	if err != nil {
		t.Fatal(err)
	}
	part, err := DatasetFromTensor("part", view.(*tensor.Dense), d.Labels[2:], d.Classes)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range part.Images {
		if v != d.Images[2*c*h*w+i] {
			t.Fatalf("view image value %d = %v, want %v", i, v, d.Images[2*c*h*w+i])
		}
	}

	for _, b := range []struct {
		name string
		x    *tensor.Dense
		want string
	}{
		{"nil", nil, "nil tensor"},
		{"3-d", tensor.New(tensor.WithShape(n, h, w), tensor.Of(tensor.Float32)), "want (N, C, H, W)"},
		{"float64", tensor.New(tensor.WithShape(n, c, h, w), tensor.Of(tensor.Float64)), "want float32"},
	} {
		if _, err := DatasetFromTensor(b.name, b.x, d.Labels, d.Classes); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: got %v, want an error containing %q", b.name, err, b.want)
		}
	}
}
