package train

import (
	"bytes"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/internal/npy"
	"github.com/dpfil/dpfil/models"
)

// ModulePath is dpfil's Go module path (how the build info names it).
const ModulePath = "github.com/dpfil/dpfil"

// ParamsNPZFile holds the final parameters of repeat 0 as named tensors
// (<kind><layer>.W / .b with their shapes, float32): numpy.load reads it.
const ParamsNPZFile = "params.npz"

// ModelName is the name of the model the config trains: its architecture's name
// when Arch is set, else Model.
func (c Config) ModelName() string {
	if c.Arch != nil {
		return c.Arch.Name
	}
	return c.Model
}

// WithArch returns c training the architecture spec a (Model set to its name).
func (c Config) WithArch(a *models.ArchSpec) Config {
	c.Arch = a
	c.Model = a.Name
	return c
}

// WithModel returns c training m, a model the caller supplies through
// Options.Model whose architecture name has the form kind:name (e.g. a
// gorgonet.GraphModel's "gorgonia-graph:<name>@<fingerprint>"): Model is set to that
// name (Arch cleared), so that the result and Config.Hash name what ran.
func (c Config) WithModel(m models.Model) Config {
	c.Arch = nil
	c.Model = m.Arch().Name
	return c
}

// callerModel reports whether name names a model the caller supplies through
// Options.Model: "kind:name" (built-in and architecture-file names have no colon).
func callerModel(name string) bool {
	i := strings.IndexByte(name, ':')
	return i > 0 && i < len(name)-1
}

// validateArch checks the model part of the config: a built-in Model, a model the
// caller supplies (a kind:name Model, see WithModel), or an Arch spec (whose input
// and classes may come from the data) with Model empty or its name.
func (c Config) validateArch() error {
	if c.Arch == nil {
		if callerModel(c.Model) {
			return nil
		}
		if _, err := models.ArchByName(c.Model); err != nil {
			return fmt.Errorf("config: %w", err)
		}
		return nil
	}
	if err := c.Arch.Check(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if c.Model != "" && c.Model != c.Arch.Name {
		return fmt.Errorf("config: model = %q but arch is %q: set model to %q (or leave it empty) so that results name what ran", c.Model, c.Arch.Name, c.Arch.Name)
	}
	return nil
}

// DataFingerprint is the fingerprint of a split: the hex SHA-256 of the content
// fingerprints (data.Dataset.Fingerprint) of its training and test parts.
func DataFingerprint(s *data.Split) string { return s.Fingerprint() }

// resolveArch returns the architecture of the run: the built-in Model, or the Arch
// spec resolved for the data's shape and classes. A pinned DataSHA256 must match.
func resolveArch(cfg Config, split *data.Split) (models.Arch, error) {
	if cfg.DataSHA256 != "" {
		if got := split.Fingerprint(); got != cfg.DataSHA256 {
			return models.Arch{}, fmt.Errorf("dataset %s has fingerprint %s, the config pins %s: the data changed", cfg.Dataset, got, cfg.DataSHA256)
		}
	}
	if cfg.Arch == nil {
		if callerModel(cfg.Model) { // the model's own (prepare checks it is given)
			return models.Arch{}, nil
		}
		return models.ArchByName(cfg.Model)
	}
	tr := split.Train
	a, err := cfg.Arch.Resolve(models.Shape{C: tr.C, H: tr.H, W: tr.W}, tr.Classes)
	if err != nil {
		return models.Arch{}, fmt.Errorf("dataset %s: %w", cfg.Dataset, err)
	}
	return a, nil
}

// BuildVersion identifies the dpfil code that produced a result, from the
// binary's build information (never from a VCS in the working directory, which
// may be the caller's repository).
type BuildVersion struct {
	Module    string `json:"module"`
	Version   string `json:"version"`            // module version, "(devel)" for a local build
	Revision  string `json:"revision,omitempty"` // VCS revision stamped at build time (dpfil built as the main module)
	Modified  bool   `json:"modified,omitempty"` // the working tree had local changes
	GoVersion string `json:"go_version"`
	Main      bool   `json:"main"` // dpfil is the main module (false: a library of Main)
	MainPath  string `json:"main_path,omitempty"`
}

// Version returns dpfil's build version: the main module's when dpfil was built as
// the program, else the version of the dpfil dependency of the program.
func Version() BuildVersion {
	v := BuildVersion{Module: ModulePath, Version: "unknown"}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.GoVersion = info.GoVersion
	if info.Main.Path == ModulePath {
		v.Main, v.Version = true, info.Main.Version
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Revision = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
		return v
	}
	v.MainPath = info.Main.Path
	for _, d := range info.Deps {
		if d.Path == ModulePath {
			v.Version = d.Version
			if d.Replace != nil {
				v.Version += " => " + d.Replace.Path
				if d.Replace.Version != "" {
					v.Version += " " + d.Replace.Version
				}
			}
		}
	}
	return v
}

// describe records what ran in the result: the architecture and its hash, the
// data's fingerprints and shape, dpfil's build version.
func (s *setup) describe(res *Result) {
	a := s.arch
	res.Arch = &a
	res.ArchHash = a.Hash()
	res.Version = Version()
	res.Dataset.InputShape = []int{s.train.C, s.train.H, s.train.W}
	res.Dataset.ClassNames = s.train.ClassNames
	sp := &data.Split{Train: s.train, Test: s.test}
	if s.test != nil {
		res.Dataset.TestSHA256 = s.test.SHA256
	}
	res.Dataset.Fingerprint = sp.Fingerprint()
}

// saveNamedParams writes repeat 0's final parameters as named tensors (params.npz):
// the architecture's layer tensors, or those a model without engine layers names
// itself (ParamTensors, e.g. a Gorgonia graph's parameter nodes).
func (s *setup) saveNamedParams(dir string, ck *checkpoint, res *Result) error {
	if len(ck.Done) == 0 {
		return nil
	}
	path := filepath.Join(dir, ParamsNPZFile)
	nt, ok := s.model.(interface{ ParamTensors() []models.ParamShape })
	var err error
	if ok && len(s.arch.Layers) == 0 {
		err = saveTensorsNPZ(path, s.arch.Name, nt.ParamTensors(), ck.Done[0].Params)
	} else {
		err = SaveParamsNPZ(path, s.arch, ck.Done[0].Params)
	}
	if err != nil {
		return err
	}
	res.ParamsNPZPath = ParamsNPZFile
	return nil
}

// SaveParamsNPZ writes a flat parameter vector of arch as an .npz of named float32
// tensors (models.Arch.Params: "conv0.W" with shape [Out InC KH KW], …), atomically.
func SaveParamsNPZ(path string, arch models.Arch, params []float32) error {
	ps, err := arch.Params()
	if err != nil {
		return fmt.Errorf("save params: %w", err)
	}
	if len(params) != arch.NumParams() {
		return fmt.Errorf("save params: %d values for the %d parameters of %s", len(params), arch.NumParams(), arch.Name)
	}
	return saveTensorsNPZ(path, arch.Name, ps, params)
}

// saveTensorsNPZ writes the tensors ps of the flat vector params (of model name).
func saveTensorsNPZ(path, name string, ps []models.ParamShape, params []float32) error {
	total := 0
	for _, p := range ps {
		total += p.Size
		if p.Offset < 0 || p.Offset+p.Size > len(params) {
			return fmt.Errorf("save params: tensor %s at %d+%d outside the %d parameters of %s", p.Name, p.Offset, p.Size, len(params), name)
		}
	}
	if total != len(params) {
		return fmt.Errorf("save params: %d values for the %d parameters of %s", len(params), total, name)
	}
	var entries []npy.Entry
	for _, p := range ps {
		b, err := npy.EncodeFloat32(p.Dims, params[p.Offset:p.Offset+p.Size])
		if err != nil {
			return fmt.Errorf("save params %s: %w", p.Name, err)
		}
		entries = append(entries, npy.Entry{Name: p.Name, NPY: b})
	}
	var buf bytes.Buffer
	if err := npy.WriteNPZ(&buf, entries); err != nil {
		return fmt.Errorf("save params: %w", err)
	}
	return writeFileAtomic(path, buf.Bytes())
}

// LoadParamsNPZ reads an .npz of named tensors back into arch's flat parameter
// vector, checking that every tensor is present with its shape and nothing else is.
func LoadParamsNPZ(path string, arch models.Arch) ([]float32, error) {
	ps, err := arch.Params()
	if err != nil {
		return nil, fmt.Errorf("load params: %w", err)
	}
	byName, err := npy.ReadNPZFile(path)
	if err != nil {
		return nil, fmt.Errorf("load params: %w", err)
	}
	out := make([]float32, arch.NumParams())
	for _, p := range ps {
		a, ok := byName[p.Name]
		if !ok {
			return nil, fmt.Errorf("load params %s: no tensor %s (%s has %d tensors)", path, p.Name, arch.Name, len(ps))
		}
		delete(byName, p.Name)
		if fmt.Sprint(a.Shape) != fmt.Sprint(p.Dims) {
			return nil, fmt.Errorf("load params %s: %s has shape %v, want %v", path, p.Name, a.Shape, p.Dims)
		}
		for i, v := range a.Data {
			out[p.Offset+i] = float32(v)
		}
	}
	for name := range byName {
		return nil, fmt.Errorf("load params %s: tensor %s is not a parameter of %s", path, name, arch.Name)
	}
	return out, nil
}

// Evaluation is a model's accuracy, mean cross-entropy and per-class accuracy on a
// dataset.
type Evaluation struct {
	N        int     `json:"n"`
	Accuracy float64 `json:"accuracy"`
	Loss     float64 `json:"loss"`
	PerClass Floats  `json:"per_class_accuracy"` // null: class absent
}

// Evaluate computes what a run reports as its test accuracy and loss, the same way
// (float32 logits in chunks of 500, float64 loss), for params of m on ds.
func Evaluate(m models.Model, params []float32, ds *data.Dataset) (Evaluation, error) {
	if len(params) != m.NumParams() {
		return Evaluation{}, fmt.Errorf("evaluate: %d parameters for a model of %d", len(params), m.NumParams())
	}
	a := m.Arch()
	if ds.Dim() != m.InputDim() {
		return Evaluation{}, fmt.Errorf("evaluate: dataset %s has %dx%dx%d inputs, model %s takes %dx%dx%d", ds.Name, ds.C, ds.H, ds.W, a.Name, a.Input.C, a.Input.H, a.Input.W)
	}
	if ds.Classes > a.Classes {
		return Evaluation{}, fmt.Errorf("evaluate: dataset %s has %d classes, model %s only %d outputs", ds.Name, ds.Classes, a.Name, a.Classes)
	}
	ev, err := evaluate(m, params, ds, a.Classes)
	if err != nil {
		return Evaluation{}, err
	}
	return Evaluation{N: ds.N, Accuracy: ev.Accuracy, Loss: ev.Loss, PerClass: ev.PerClass}, nil
}

// FinishedRun is a finished run read back from its directory: the result, the architecture
// that ran and the final parameters of one repeat.
type FinishedRun struct {
	Dir    string
	Result *Result
	Arch   models.Arch
	Repeat int
	Params []float32
	// ParamsFile is the file the parameters were read from.
	ParamsFile string
	// Model is the registered model that ran (LoadRunModels), freshly built; nil
	// for an engine architecture (built-in or architecture file).
	Model models.Model
}

// LoadRun reads a finished run: result.json, its architecture (recorded, or the
// built-in Model of results that predate the record) and the final parameters of
// repeat r (params.npz for repeat 0 when present, else params.npy / params_r<r>.npy).
func LoadRun(dir string, r int) (*FinishedRun, error) {
	return loadRun(dir, r, nil)
}

// LoadRunModels is LoadRun for a program with registered models: a run of a
// registered model (a kind:name architecture without engine layers, Registry) gets
// that model, rebuilt by reg and checked against the run's recorded name and
// architecture hash, and its flat parameters (params.npy, params_r<r>.npy). A run
// of a model reg lacks is refused with the name it was trained with.
func LoadRunModels(dir string, r int, reg Registry) (*FinishedRun, error) {
	if reg == nil {
		reg = Registry{}
	}
	return loadRun(dir, r, reg)
}

// loadRun is LoadRun, with the registered models reg when it is not nil.
func loadRun(dir string, r int, reg Registry) (*FinishedRun, error) {
	res, err := ReadResult(dir)
	if err != nil {
		return nil, explainNoResult(dir, err)
	}
	fr := &FinishedRun{Dir: dir, Result: res, Repeat: r}
	switch {
	case res.Arch != nil:
		fr.Arch = *res.Arch
	default:
		if fr.Arch, err = models.ArchByName(res.Config.Model); err != nil {
			return nil, fmt.Errorf("run %s: %w", dir, err)
		}
	}
	registered := len(fr.Arch.Layers) == 0 && callerModel(fr.Arch.Name)
	if registered && reg != nil {
		if _, fr.Model, err = reg.Find(fr.Arch.Name); err != nil {
			return nil, fmt.Errorf("run %s: %w", dir, err)
		}
		fr.Arch = fr.Model.Arch()
	} else if registered {
		return nil, fmt.Errorf("run %s: model %s was supplied by the caller (train.Options.Model), not recorded as layers: rebuild it and read %s with LoadParams", dir, fr.Arch.Name, ParamsFile)
	}
	if res.ArchHash != "" && fr.Arch.Hash() != res.ArchHash {
		return nil, fmt.Errorf("run %s: the recorded architecture has hash %s, result.json says %s", dir, fr.Arch.Hash(), res.ArchHash)
	}
	if r < 0 || r >= max(1, len(res.Repeats)) {
		return nil, fmt.Errorf("run %s: repeat %d, the run has %d", dir, r, len(res.Repeats))
	}
	if r == 0 && res.ParamsNPZPath != "" && fr.Model == nil {
		fr.ParamsFile = filepath.Join(dir, res.ParamsNPZPath)
		fr.Params, err = LoadParamsNPZ(fr.ParamsFile, fr.Arch)
	} else {
		fr.ParamsFile = filepath.Join(dir, paramsFileName(r))
		fr.Params, err = LoadParams(fr.ParamsFile)
	}
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", dir, err)
	}
	want := fr.Arch.NumParams()
	if fr.Model != nil {
		want = fr.Model.NumParams()
	}
	if len(fr.Params) != want {
		return nil, fmt.Errorf("run %s: %s holds %d parameters, %s has %d", dir, fr.ParamsFile, len(fr.Params), fr.Arch.Name, want)
	}
	return fr, nil
}
