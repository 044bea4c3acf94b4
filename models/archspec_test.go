package models

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

const conv3YAML = `
name: conv3-relu
layers:
  - {kind: conv, out: 8, kernel: 3, padding: same}
  - relu
  - {kind: conv, out: 8, kernel: 3, stride: 2, padding: same}
  - relu
  - {kind: avgpool, kernel: 2, stride: 2}
  - {kind: conv, out: 4, kh: 2, kw: 3, padding: 1}
  - relu
  - flatten
  - {kind: dense, out: 16}
  - tanh
  - {kind: dense}
`

func TestArchSpecResolve(t *testing.T) {
	s, err := ParseArchSpec(strings.NewReader(conv3YAML))
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Resolve(Shape{C: 1, H: 28, W: 28}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "conv3-relu" || a.Classes != 10 || a.Input != (Shape{C: 1, H: 28, W: 28}) {
		t.Fatalf("arch %+v", a)
	}
	want0 := LayerSpec{Kind: KindConv, Out: 8, KH: 3, KW: 3, Stride: 1, PadT: 1, PadB: 1, PadL: 1, PadR: 1}
	if !reflect.DeepEqual(a.Layers[0], want0) {
		t.Errorf("layer 0 %+v, want %+v", a.Layers[0], want0)
	}
	if l := a.Layers[2]; l.PadT != 0 || l.PadB != 1 { // SAME at stride 2 on 28: (0, 1)
		t.Errorf("layer 2 %+v", l)
	}
	if l := a.Layers[5]; l.KH != 2 || l.KW != 3 || l.PadT != 1 || l.PadR != 1 || l.Stride != 1 {
		t.Errorf("layer 5 %+v", l)
	}
	if l := a.Layers[len(a.Layers)-1]; l.Out != 10 {
		t.Errorf("last dense out %d, want the 10 classes", l.Out)
	}
	// The spec of the resolved arch resolves to it again, also through JSON.
	b, err := json.Marshal(SpecOf(a))
	if err != nil {
		t.Fatal(err)
	}
	s2, err := ParseArchSpec(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	a2, err := s2.Resolve(Shape{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, a2) || a.Hash() != a2.Hash() {
		t.Errorf("round trip changed the arch:\n%+v\n%+v", a, a2)
	}
	var buf bytes.Buffer
	if err := a.Describe(&buf); err != nil || !strings.Contains(buf.String(), "relu") || !strings.Contains(buf.String(), "parameters: ") {
		t.Errorf("describe: %v\n%s", err, buf.String())
	}
	info, err := a.Info()
	if err != nil || info.NumParams != a.NumParams() || len(info.Layers) != len(a.Layers) || info.Hash != a.Hash() {
		t.Errorf("info %+v, %v", info, err)
	}
}

func TestArchSpecRefusals(t *testing.T) {
	in := Shape{C: 1, H: 28, W: 28}
	for _, c := range []struct{ name, yaml, want string }{
		{"unknown top key", "name: x\nlayer: []\n", "field layer not found"},
		{"unknown layer key", "name: x\nlayers: [{kind: dense, units: 3}]\n", `unknown layer key "units"`},
		{"unknown kind", "name: x\nlayers: [softplus]\n", `unknown layer kind "softplus"`},
		{"field of another kind", "name: x\nlayers: [{kind: relu, out: 3}]\n", "relu takes no fields"},
		{"stride on dense", "name: x\nlayers: [flatten, {kind: dense, out: 10, stride: 2}]\n", "dense has no field stride"},
		{"kernel contradiction", "name: x\nlayers: [{kind: conv, out: 2, kernel: 3, kh: 2}]\n", "contradicts"},
		{"padding twice", "name: x\nlayers: [{kind: conv, out: 2, kernel: 3, padding: same, pad_t: 1}]\n", "not both"},
		{"bad padding", "name: x\nlayers: [{kind: conv, out: 2, kernel: 3, padding: full}]\n", "want same, valid"},
		{"no name", "layers: [flatten, dense]\n", "name is empty"},
		{"built-in name", "name: mnist-cnn\nlayers: [flatten, dense]\n", "built-in"},
		{"no layers", "name: x\n", "no layers"},
		{"empty", "", "empty file"},
		{"bad input", "name: x\ninput: [1, 28]\nlayers: [flatten, dense]\n", "three positive"},
		{"input mismatch", "name: x\ninput: [3, 32, 32]\nlayers: [flatten, dense]\n", "but the data is 1x28x28"},
		{"too few classes", "name: x\nclasses: 5\nlayers: [flatten, dense]\n", "5 classes, but the data has 10"},
		{"does not fit", "name: x\nlayers: [{kind: conv, out: 2, kernel: 40}, flatten, dense]\n", "does not fit"},
		{"not flattened", "name: x\nlayers: [{kind: dense, out: 10}]\n", "flattened input"},
		{"wrong logits", "name: x\nlayers: [flatten, {kind: dense, out: 7}]\n", "want 10 logits"},
	} {
		s, err := ParseArchSpec(strings.NewReader(c.yaml))
		if err == nil {
			_, err = s.Resolve(in, 10)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to mention %q", c.name, err, c.want)
		}
	}
}

// TestArchSpecJSON: a spec in a Config (JSON) reads back the same, bare kinds
// included, and unknown keys are refused there too.
func TestArchSpecJSON(t *testing.T) {
	var s ArchSpec
	if err := json.Unmarshal([]byte(`{"name":"x","layers":["flatten",{"kind":"dense","out":10}]}`), &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Layers) != 2 || s.Layers[0].Kind != KindFlatten || s.Layers[1].Out != 10 {
		t.Fatalf("%+v", s)
	}
	if err := json.Unmarshal([]byte(`{"name":"x","layers":[{"kind":"dense","units":10}]}`), &s); err == nil {
		t.Error("unknown key accepted")
	}
}

// TestArchHashStable pins the hash of the built-in architectures (a change means
// results of the same model would no longer be recognised as such).
func TestArchHashStable(t *testing.T) {
	seen := map[string]string{}
	for _, name := range ArchNames() {
		a, _ := ArchByName(name)
		h := a.Hash()
		if len(h) != 16 {
			t.Errorf("%s: hash %q", name, h)
		}
		if o, dup := seen[h]; dup {
			t.Errorf("%s and %s share hash %s", name, o, h)
		}
		seen[h] = name
	}
}
