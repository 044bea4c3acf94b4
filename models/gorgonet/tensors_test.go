package gorgonet

import (
	"testing"

	"gorgonia.org/tensor"

	"github.com/dpfil/dpfil/models"
)

// TestParamTensors: the named tensors are views of the flat vector with the
// documented shapes.
func TestParamTensors(t *testing.T) {
	a, _ := models.ArchByName("mnist-cnn")
	p := make([]float32, a.NumParams())
	ts, err := ParamTensors(a, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 8 || ts[0].Name != "conv0.W" || !ts[0].Shape().Eq(tensor.Shape{16, 1, 8, 8}) || ts[7].Name != "dense9.b" {
		t.Fatalf("%v %v", ts[0].Name, ts[0].Shape())
	}
	if err := ts[1].SetAt(float32(3), 5); err != nil {
		t.Fatal(err)
	}
	if p[16*64+5] != 3 {
		t.Error("conv0.b is not a view of the parameter vector")
	}
	if _, err := ParamTensors(a, p[:10]); err == nil {
		t.Error("short vector accepted")
	}
}
