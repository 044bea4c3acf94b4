package models

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/dpfil/dpfil/internal/strictyaml"
)

// ArchSpec is an architecture as a user writes it (an architecture file, YAML or
// JSON, or Config.Arch): a layer list whose input shape and class count may be left
// to the data, with kernel and padding shortcuts. Resolve turns it into an Arch.
//
//	name: conv3-relu
//	input: [1, 28, 28]     # optional: C, H, W (default: the dataset's)
//	classes: 10            # optional (default: the dataset's)
//	layers:
//	  - {kind: conv, out: 16, kernel: 3, stride: 1, padding: same}
//	  - relu
//	  - {kind: avgpool, kernel: 2, stride: 2}
//	  - flatten
//	  - {kind: dense}      # the last dense layer's out defaults to the classes
type ArchSpec struct {
	Name    string     `json:"name" yaml:"name"`
	Input   []int      `json:"input,omitempty" yaml:"input,omitempty"`
	Classes int        `json:"classes,omitempty" yaml:"classes,omitempty"`
	Layers  []LayerDef `json:"layers" yaml:"layers"`
}

// LayerDef is one layer of an ArchSpec: the fields of LayerSpec plus the
// shortcuts kernel (kh = kw = kernel) and padding ("same", "valid", or a number n
// for n on every side). A bare kind name stands for a layer without fields.
type LayerDef struct {
	Kind    LayerKind `json:"kind" yaml:"kind"`
	Out     int       `json:"out,omitempty" yaml:"out,omitempty"`
	Kernel  int       `json:"kernel,omitempty" yaml:"kernel,omitempty"`
	KH      int       `json:"kh,omitempty" yaml:"kh,omitempty"`
	KW      int       `json:"kw,omitempty" yaml:"kw,omitempty"`
	Stride  int       `json:"stride,omitempty" yaml:"stride,omitempty"`
	Padding string    `json:"padding,omitempty" yaml:"padding,omitempty"`
	PadT    int       `json:"pad_t,omitempty" yaml:"pad_t,omitempty"`
	PadB    int       `json:"pad_b,omitempty" yaml:"pad_b,omitempty"`
	PadL    int       `json:"pad_l,omitempty" yaml:"pad_l,omitempty"`
	PadR    int       `json:"pad_r,omitempty" yaml:"pad_r,omitempty"`
	Mean    []float64 `json:"mean,omitempty" yaml:"mean,omitempty"`
	Std     []float64 `json:"std,omitempty" yaml:"std,omitempty"`
}

// layerDefKeys are the keys a layer may have in a file.
var layerDefKeys = []string{"kind", "out", "kernel", "kh", "kw", "stride", "padding", "pad_t", "pad_b", "pad_l", "pad_r", "mean", "std"}

// UnmarshalYAML reads a layer written as a bare kind name or as a mapping, and
// refuses unknown keys.
func (l *LayerDef) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*l = LayerDef{Kind: LayerKind(n.Value)}
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: a layer is a kind name or a mapping with a kind", n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i].Value; !slices.Contains(layerDefKeys, k) {
			return fmt.Errorf("line %d: unknown layer key %q (known: %s)", n.Content[i].Line, k, strings.Join(layerDefKeys, ", "))
		}
	}
	type plain LayerDef
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*l = LayerDef(p)
	return nil
}

// UnmarshalJSON reads a layer written as a bare kind name or as an object, and
// refuses unknown keys.
func (l *LayerDef) UnmarshalJSON(b []byte) error {
	var name string
	if json.Unmarshal(b, &name) == nil {
		*l = LayerDef{Kind: LayerKind(name)}
		return nil
	}
	type plain LayerDef
	var p plain
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return err
	}
	*l = LayerDef(p)
	return nil
}

// ParseArchSpec reads an architecture file (YAML, of which JSON is a subset).
// Unknown keys are refused.
func ParseArchSpec(r io.Reader) (*ArchSpec, error) {
	var s ArchSpec
	if err := strictyaml.Decode(r, &s); err != nil {
		return nil, fmt.Errorf("architecture: %w", err)
	}
	if err := s.Check(); err != nil {
		return nil, err
	}
	return &s, nil
}

// LoadArchSpec reads the architecture file at path (see ParseArchSpec).
func LoadArchSpec(path string) (*ArchSpec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("architecture: %w", err)
	}
	defer f.Close()
	s, err := ParseArchSpec(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Check validates what does not depend on the data: a name, known kinds, only the
// fields each kind uses, consistent shortcuts, and a well-formed input shape.
func (s *ArchSpec) Check() error {
	if strings.TrimSpace(s.Name) == "" {
		return fmt.Errorf("architecture: name is empty")
	}
	if slices.Contains(ArchNames(), s.Name) {
		return fmt.Errorf("architecture %s: the name of a built-in model; choose another", s.Name)
	}
	if len(s.Input) != 0 && (len(s.Input) != 3 || s.Input[0] <= 0 || s.Input[1] <= 0 || s.Input[2] <= 0) {
		return fmt.Errorf("architecture %s: input %v, want three positive values [C, H, W]", s.Name, s.Input)
	}
	if s.Classes < 0 {
		return fmt.Errorf("architecture %s: classes = %d must be positive (or left out: the dataset's)", s.Name, s.Classes)
	}
	if len(s.Layers) == 0 {
		return fmt.Errorf("architecture %s: no layers", s.Name)
	}
	for i, l := range s.Layers {
		if _, err := l.spec(0, 0); err != nil {
			return fmt.Errorf("architecture %s layer %d: %w", s.Name, i, err)
		}
	}
	return nil
}

// used lists the file keys set in l.
func (l LayerDef) used() []string {
	var u []string
	for _, f := range []struct {
		key string
		set bool
	}{{"out", l.Out != 0}, {"kernel", l.Kernel != 0}, {"kh", l.KH != 0}, {"kw", l.KW != 0}, {"stride", l.Stride != 0},
		{"padding", l.Padding != ""}, {"pad_t", l.PadT != 0}, {"pad_b", l.PadB != 0}, {"pad_l", l.PadL != 0}, {"pad_r", l.PadR != 0},
		{"mean", l.Mean != nil}, {"std", l.Std != nil}} {
		if f.set {
			u = append(u, f.key)
		}
	}
	return u
}

// spec resolves one layer for a per-sample input of h×w (0: unknown yet, SAME
// padding left unresolved).
func (l LayerDef) spec(h, w int) (LayerSpec, error) {
	kind, err := LayerOf(l.Kind)
	if err != nil {
		return LayerSpec{}, err
	}
	allowed := kind.Fields()
	for _, k := range l.used() {
		f := k
		switch k {
		case "kernel":
			f = "kh"
		case "padding":
			f = "pad_t"
		}
		if !slices.Contains(allowed, f) {
			if len(allowed) == 0 {
				return LayerSpec{}, fmt.Errorf("%s takes no fields, got %s", l.Kind, k)
			}
			return LayerSpec{}, fmt.Errorf("%s has no field %s", l.Kind, k)
		}
	}
	out := LayerSpec{Kind: l.Kind, Out: l.Out, KH: l.KH, KW: l.KW, Stride: l.Stride,
		PadT: l.PadT, PadB: l.PadB, PadL: l.PadL, PadR: l.PadR,
		Mean: append([]float64(nil), l.Mean...), Std: append([]float64(nil), l.Std...)}
	if l.Mean == nil {
		out.Mean = nil
	}
	if l.Std == nil {
		out.Std = nil
	}
	if l.Kernel != 0 {
		if (l.KH != 0 && l.KH != l.Kernel) || (l.KW != 0 && l.KW != l.Kernel) {
			return LayerSpec{}, fmt.Errorf("kernel %d contradicts kh %d / kw %d", l.Kernel, l.KH, l.KW)
		}
		out.KH, out.KW = l.Kernel, l.Kernel
	}
	if slices.Contains(allowed, "stride") && out.Stride == 0 {
		out.Stride = 1
	}
	if l.Padding != "" {
		if l.PadT != 0 || l.PadB != 0 || l.PadL != 0 || l.PadR != 0 {
			return LayerSpec{}, fmt.Errorf("give padding or pad_t/pad_b/pad_l/pad_r, not both")
		}
		switch p := strings.ToLower(strings.TrimSpace(l.Padding)); p {
		case "valid":
		case "same":
			if out.KH <= 0 || out.KW <= 0 || out.Stride <= 0 {
				return LayerSpec{}, fmt.Errorf("same padding needs a positive kernel and stride")
			}
			if h > 0 && w > 0 {
				out.PadT, out.PadB = samePad(h, out.KH, out.Stride)
				out.PadL, out.PadR = samePad(w, out.KW, out.Stride)
			}
		default:
			n, err := strconv.Atoi(p)
			if err != nil || n < 0 {
				return LayerSpec{}, fmt.Errorf("padding %q, want same, valid or a number ≥ 0", l.Padding)
			}
			out.PadT, out.PadB, out.PadL, out.PadR = n, n, n, n
		}
	}
	return out, nil
}

// Resolve returns the Arch of the spec for data with per-sample shape in and
// classes classes. An input or class count the spec states must match the data's
// (the model may have more outputs than the data has classes); SAME padding is
// resolved for each layer's input, and a last dense layer without out gets the
// class count.
func (s *ArchSpec) Resolve(in Shape, classes int) (Arch, error) {
	if err := s.Check(); err != nil {
		return Arch{}, err
	}
	if len(s.Input) == 3 {
		want := Shape{C: s.Input[0], H: s.Input[1], W: s.Input[2]}
		if in.Size() > 0 && want != in {
			return Arch{}, fmt.Errorf("architecture %s: input %dx%dx%d, but the data is %dx%dx%d", s.Name, want.C, want.H, want.W, in.C, in.H, in.W)
		}
		in = want
	}
	if in.Size() <= 0 {
		return Arch{}, fmt.Errorf("architecture %s: no input shape (give input: [C, H, W] or data)", s.Name)
	}
	k := s.Classes
	if k == 0 {
		k = classes
	} else if classes > k {
		return Arch{}, fmt.Errorf("architecture %s: %d classes, but the data has %d", s.Name, k, classes)
	}
	if k <= 0 {
		return Arch{}, fmt.Errorf("architecture %s: no class count (give classes or data)", s.Name)
	}
	a := Arch{Name: s.Name, Input: in, Classes: k}
	cur := in
	for i, l := range s.Layers {
		ls, err := l.spec(cur.H, cur.W)
		if err != nil {
			return Arch{}, fmt.Errorf("architecture %s layer %d: %w", s.Name, i, err)
		}
		if i == len(s.Layers)-1 && ls.Kind == KindDense && ls.Out == 0 {
			ls.Out = k
		}
		kind, _ := LayerOf(ls.Kind)
		if cur, err = kind.OutShape(ls, cur); err != nil {
			return Arch{}, fmt.Errorf("architecture %s layer %d: %w", s.Name, i, err)
		}
		a.Layers = append(a.Layers, ls)
	}
	if _, err := a.Shapes(); err != nil {
		return Arch{}, fmt.Errorf("architecture: %w", err)
	}
	return a, nil
}

// SpecOf returns the spec of a resolved architecture: every field explicit (input,
// classes, padding), so that it resolves to arch again.
func SpecOf(a Arch) *ArchSpec {
	s := &ArchSpec{Name: a.Name, Input: []int{a.Input.C, a.Input.H, a.Input.W}, Classes: a.Classes}
	for _, l := range a.Layers {
		s.Layers = append(s.Layers, LayerDef{Kind: l.Kind, Out: l.Out, KH: l.KH, KW: l.KW, Stride: l.Stride,
			PadT: l.PadT, PadB: l.PadB, PadL: l.PadL, PadR: l.PadR,
			Mean: append([]float64(nil), l.Mean...), Std: append([]float64(nil), l.Std...)})
		if l.Mean == nil {
			s.Layers[len(s.Layers)-1].Mean = nil
		}
		if l.Std == nil {
			s.Layers[len(s.Layers)-1].Std = nil
		}
	}
	return s
}

// Hash is the hex SHA-256 (first 16 digits) of the architecture's canonical JSON:
// two architectures with the same hash compute the same function of the same
// parameter layout.
func (a Arch) Hash() string {
	b, err := json.Marshal(a)
	if err != nil { // plain values only
		b = []byte(fmt.Sprintf("%#v", a))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// Describe writes a human description of the architecture: one line per layer
// with its output shape and parameter count, then the totals.
func (a Arch) Describe(w io.Writer) error {
	shapes, err := a.Shapes()
	if err != nil {
		return err
	}
	params, err := a.Params()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: input %dx%dx%d, %d classes\n", a.Name, a.Input.C, a.Input.H, a.Input.W, a.Classes)
	for i, l := range a.Layers {
		kind, _ := LayerOf(l.Kind)
		np := 0
		for _, p := range params {
			if p.Layer == i {
				np += p.Size
			}
		}
		s := shapes[i+1]
		fmt.Fprintf(w, "  %2d %-44s → %dx%dx%d  params %d\n", i, kind.Describe(l), s.C, s.H, s.W, np)
	}
	fmt.Fprintf(w, "parameters: %d\n", a.NumParams())
	return nil
}

// LayerInfo describes one layer of an architecture (JSON of --describe).
type LayerInfo struct {
	Index       int       `json:"index"`
	Kind        LayerKind `json:"kind"`
	Description string    `json:"description"`
	Spec        LayerSpec `json:"spec"`
	Output      []int     `json:"output"` // C, H, W
	Params      int       `json:"params"`
	Tensors     []string  `json:"tensors,omitempty"`
}

// ArchInfo is an architecture's description as JSON.
type ArchInfo struct {
	Name      string      `json:"name"`
	Hash      string      `json:"hash"`
	Input     []int       `json:"input"`
	Classes   int         `json:"classes"`
	Layers    []LayerInfo `json:"layers"`
	NumParams int         `json:"num_params"`
	FLOPs     FLOPCount   `json:"flops_k50"` // per sample, with k = 50 FIL coordinates
	Spec      *ArchSpec   `json:"spec"`
}

// Info returns the architecture's description.
func (a Arch) Info() (*ArchInfo, error) {
	shapes, err := a.Shapes()
	if err != nil {
		return nil, err
	}
	params, err := a.Params()
	if err != nil {
		return nil, err
	}
	info := &ArchInfo{Name: a.Name, Hash: a.Hash(), Input: []int{a.Input.C, a.Input.H, a.Input.W}, Classes: a.Classes,
		NumParams: a.NumParams(), Spec: SpecOf(a)}
	for i, l := range a.Layers {
		kind, _ := LayerOf(l.Kind)
		s := shapes[i+1]
		li := LayerInfo{Index: i, Kind: l.Kind, Description: kind.Describe(l), Spec: l, Output: []int{s.C, s.H, s.W}}
		for _, p := range params {
			if p.Layer == i {
				li.Params += p.Size
				li.Tensors = append(li.Tensors, fmt.Sprintf("%s %v", p.Name, p.Dims))
			}
		}
		info.Layers = append(info.Layers, li)
	}
	if info.FLOPs, err = CountFLOPs(a, 50); err != nil {
		return nil, err
	}
	return info, nil
}
