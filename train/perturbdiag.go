package train

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"

	"github.com/dpfil/dpfil/internal/npy"
	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/train/fil"
)

// g_φ diagnostics per private step (Options.PerturbDiag = m > 0; Edmunds 2024,
// Appendix A, Figs. A.1–A.29 and Table A.1). RUNDIR/perturb-diag/ holds
// PerturbDiagMetaFile ({"format": 1, "vectors": m}) and, for every repeat r and
// private step t (1-based, zero-padded to 4 digits), two files:
//
//   - r<r>-step<t>.npz: per batch member (n of them, in batch order) the float64
//     vectors "base_norm", "perturb_norm", "final_norm" (n each: ‖g‖, ‖g_φ(z, g)‖ and
//     ‖CLIP(g + g_φ)‖, g the base gradient with the pruned coordinates removed, the
//     final contribution before the noise) and "cosine" (n: cos(g_φ, g), NaN where
//     either is zero); and for the first min(m, n) members the float32 matrices
//     "base", "perturb" and "final" (min(m, n) × k) of those vectors restricted to
//     the k released coordinates, whose parameter indices are the int64 "columns"
//     (k). When g_φ is not yet active (its output layer still zero) the perturbation
//     is zero and the final contribution CLIP(g).
//   - r<r>-step<t>.json: PerturbDiagStep, the step's scalars (test accuracy after the
//     update, the repeat's cumulative dFIL statistics, ε after the step).
//
// Files are written when the step ends, atomically, so a run killed and resumed
// keeps the steps written before its checkpoint and rewrites (bit-identically) those
// after it. ReadPerturbDiag and ReadPerturbDiagArrays read them back.

// PerturbDiagDir is the run directory's subdirectory of g_φ diagnostics.
const PerturbDiagDir = "perturb-diag"

// PerturbDiagMetaFile is the diagnostics directory's description (perturbDiagMeta).
const PerturbDiagMetaFile = "diag.json"

// perturbDiagMeta is PerturbDiagMetaFile: the format version and the number of batch
// members whose vectors are kept (what a resumed run keeps using).
type perturbDiagMeta struct {
	Format  int `json:"format"`
	Vectors int `json:"vectors"`
}

// PerturbDiagStep is one step's r<r>-step<t>.json.
type PerturbDiagStep struct {
	Repeat int `json:"repeat"`
	Step   int `json:"step"` // 1-based: the thesis's "iteration"
	// Samples is n (the batch members), Vectors the members whose vectors are kept,
	// Params P and Columns k (released coordinates).
	Samples int `json:"samples"`
	Vectors int `json:"vectors"`
	Params  int `json:"params"`
	Columns int `json:"columns"`
	// Perturbed says g_φ was active (its output layer trained) in this step.
	Perturbed bool    `json:"perturbed"`
	Lambda    float64 `json:"lambda"`
	// Standardised: g_φ's input standardisation is on; false with
	// perturb_no_standardise (raw inputs).
	Standardised bool `json:"standardised"`
	// TestAccuracy is that of the parameters after the step's update.
	TestAccuracy float64 `json:"test_accuracy"`
	// DFIL* summarise the repeat's per-sample dFIL accumulated over steps 1…t (null
	// when FIL is off).
	DFILMax    *float64 `json:"dfil_max"`
	DFILMean   *float64 `json:"dfil_mean"`
	DFILMedian *float64 `json:"dfil_median"`
	// Epsilon is the DP-SGD ε at the run's δ after t steps (Accountant's; null without
	// noise or when the accountant cannot give it).
	Epsilon    *float64 `json:"epsilon"`
	Accountant string   `json:"accountant,omitempty"`
	Delta      float64  `json:"delta"`
	// Arrays names the step's .npz file (in the same directory).
	Arrays string `json:"arrays"`
}

// PerturbDiagArrays are one step's arrays: per member (N) the norms and the cosine,
// and the vectors of the first M members (row-major M × K).
type PerturbDiagArrays struct {
	N, M, K                                  int
	BaseNorm, PerturbNorm, FinalNorm, Cosine []float64
	Base, Perturb, Final                     []float64
	Columns                                  []int
}

// perturbDiag records the steps of a run (tuning.diag; nil when off).
type perturbDiag struct {
	dir       string
	vectors   int  // members whose vectors are kept
	n         int  // samples captured in the current step
	nb        int  // its batch size (perturbDiagCapture)
	perturbed bool // g_φ was active in it
	p         int  // parameters
	// Per member: the norms and the cosine; for the first `vectors`: the vectors
	// (P values each, as captured).
	baseNorm, pertNorm, finNorm, cos []float64
	base, pert, fin                  []float32
}

// diagFileBase is the stem of repeat r's step t files.
func diagFileBase(r, t int) string { return fmt.Sprintf("r%d-step%04d", r, t) }

// startPerturbDiag turns the recorder on when opt asks for it, or when a resumed run's
// directory already holds diagnostics (so that resuming does not stop recording; it
// keeps their vector count).
func (s *setup) startPerturbDiag(opt Options) error {
	if opt.PerturbDiag < 0 {
		return fmt.Errorf("perturb diagnostics: %d vectors per step, want ≥ 0", opt.PerturbDiag)
	}
	dir := filepath.Join(opt.Out, PerturbDiagDir)
	meta := perturbDiagMeta{Format: 1, Vectors: opt.PerturbDiag}
	if opt.Resume && opt.Out != "" {
		b, err := os.ReadFile(filepath.Join(dir, PerturbDiagMetaFile))
		switch {
		case err == nil:
			var old perturbDiagMeta
			if err := json.Unmarshal(b, &old); err != nil || old.Format != 1 || old.Vectors < 1 {
				return fmt.Errorf("perturb diagnostics: %s is not a format-1 description (%s)", filepath.Join(dir, PerturbDiagMetaFile), bytes.TrimSpace(b))
			}
			if meta.Vectors > 0 && meta.Vectors != old.Vectors {
				return fmt.Errorf("perturb diagnostics: the run recorded %d vectors per step, not %d: resume it without the count or with %d", old.Vectors, meta.Vectors, old.Vectors)
			}
			meta = old
		case !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("perturb diagnostics: %w", err)
		}
	}
	if meta.Vectors == 0 {
		return nil
	}
	if opt.Out == "" {
		return errors.New("perturb diagnostics are written into the run directory: give one (--out)")
	}
	if s.tune == nil || !s.cfg.Tuning.PerturbNet {
		return errors.New("perturb diagnostics record g_φ: turn on perturb_net (--perturb-net)")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("perturb diagnostics: %w", err)
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return fmt.Errorf("perturb diagnostics: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(dir, PerturbDiagMetaFile), append(b, '\n')); err != nil {
		return fmt.Errorf("perturb diagnostics: %w", err)
	}
	s.tune.diag = &perturbDiag{dir: dir, vectors: meta.Vectors, p: s.p}
	return nil
}

// capture records sample s of the step being summed: its masked gradient g and
// perturbation delta (P values each) and, from them, CLIP(g + delta).
func (d *perturbDiag) capture(s int, g, delta []float64, clip models.Clip) {
	P := len(g)
	grow := func(v []float64) []float64 {
		if len(v) <= s {
			v = append(v, make([]float64, s+1-len(v))...)
		}
		return v
	}
	d.baseNorm, d.pertNorm, d.finNorm, d.cos = grow(d.baseNorm), grow(d.pertNorm), grow(d.finNorm), grow(d.cos)
	d.n = max(d.n, s+1)
	var gg, dd, gd, ww float64
	for i := range g {
		w := g[i] + delta[i]
		gg += g[i] * g[i]
		dd += delta[i] * delta[i]
		gd += g[i] * delta[i]
		ww += w * w
	}
	sc, _ := clip.Scale(math.Sqrt(ww))
	d.baseNorm[s], d.pertNorm[s], d.finNorm[s] = math.Sqrt(gg), math.Sqrt(dd), sc*math.Sqrt(ww)
	d.cos[s] = math.NaN()
	if gg > 0 && dd > 0 {
		d.cos[s] = gd / math.Sqrt(gg*dd)
	}
	if s >= d.vectors {
		return
	}
	if need := (s + 1) * P; len(d.base) < need {
		d.base = slices.Grow(d.base, need-len(d.base))[:need]
		d.pert = slices.Grow(d.pert, need-len(d.pert))[:need]
		d.fin = slices.Grow(d.fin, need-len(d.fin))[:need]
	}
	b, p, f := d.base[s*P:(s+1)*P], d.pert[s*P:(s+1)*P], d.fin[s*P:(s+1)*P]
	for i := range g {
		b[i] = float32(g[i])
		p[i] = float32(delta[i])
		f[i] = float32(sc * (g[i] + delta[i]))
	}
}

// perturbDiagCapture completes the capture of a step of nb samples before its update
// (run.go's step, θ_t still in w.p32): when g_φ was not active, ClippedGradSum took
// the plain path and captured nothing, so the masked gradients are taken here with a
// zero perturbation.
func (w *worker) perturbDiagCapture(nb int) error {
	tu := w.s.tune
	if tu == nil || tu.diag == nil {
		return nil
	}
	d := tu.diag
	d.nb, d.perturbed = nb, d.n > 0
	if d.n == 0 && nb > 0 {
		if err := d.captureUnperturbed(tu, w.p32, w.x[:nb*w.s.d], w.y[:nb], w.s.clip); err != nil {
			return fmt.Errorf("perturb diagnostics, step %d: %w", w.st.Step+1, err)
		}
	}
	if d.n != nb {
		return fmt.Errorf("perturb diagnostics, step %d: captured %d samples of a batch of %d", w.st.Step+1, d.n, nb)
	}
	return nil
}

// perturbDiagStep writes the diagnostics of the step just taken (run loop, after
// the update).
func (w *worker) perturbDiagStep() error {
	tu := w.s.tune
	if tu == nil || tu.diag == nil {
		return nil
	}
	d, s := tu.diag, w.s
	defer func() { d.n, d.nb = 0, 0 }()
	nb, m := d.nb, min(d.nb, d.vectors)
	mask := tu.curMask()
	cols := make([]int, 0, s.p)
	for i := 0; i < s.p; i++ {
		if mask == nil || mask[i] {
			cols = append(cols, i)
		}
	}
	ev, err := w.evaluate(s.test)
	if err != nil {
		return err
	}
	c := tu.perturb.cfg
	rec := PerturbDiagStep{Repeat: w.st.Repeat, Step: w.st.Step, Samples: nb, Vectors: m, Params: s.p, Columns: len(cols),
		Perturbed: d.perturbed, Lambda: tu.perturb.net.lambda, Standardised: !c.PerturbNoStd,
		TestAccuracy: ev.Accuracy, Delta: s.priv.Delta, Arrays: diagFileBase(w.st.Repeat, w.st.Step) + ".npz"}
	if w.fil != nil {
		sum := fil.Summarize(w.fil.DFIL())
		rec.DFILMax, rec.DFILMean, rec.DFILMedian = finitePtr(sum.Max), finitePtr(sum.Mean), finitePtr(sum.Median)
	}
	if eps, acct := w.progressEpsilon(); !math.IsInf(eps, 0) && !math.IsNaN(eps) {
		rec.Epsilon, rec.Accountant = &eps, acct
	}
	var entries []npy.Entry
	add := func(name string, b []byte, err error) error {
		if err != nil {
			return fmt.Errorf("perturb diagnostics: %s: %w", name, err)
		}
		entries = append(entries, npy.Entry{Name: name, NPY: b})
		return nil
	}
	for _, a := range []struct {
		name string
		v    []float64
	}{{"base_norm", d.baseNorm}, {"perturb_norm", d.pertNorm}, {"final_norm", d.finNorm}, {"cosine", d.cos}} {
		b, err := npy.EncodeFloat64([]int{nb}, a.v[:nb])
		if err := add(a.name, b, err); err != nil {
			return err
		}
	}
	for _, a := range []struct {
		name string
		v    []float32
	}{{"base", d.base}, {"perturb", d.pert}, {"final", d.fin}} {
		mat := make([]float32, m*len(cols))
		for r := 0; r < m; r++ {
			row := a.v[r*s.p : (r+1)*s.p]
			for j, c := range cols {
				mat[r*len(cols)+j] = row[c]
			}
		}
		b, err := npy.EncodeFloat32([]int{m, len(cols)}, mat)
		if err := add(a.name, b, err); err != nil {
			return err
		}
	}
	b, err := npy.EncodeInt64([]int{len(cols)}, cols)
	if err := add("columns", b, err); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := npy.WriteNPZ(&buf, entries); err != nil {
		return fmt.Errorf("perturb diagnostics: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(d.dir, rec.Arrays), buf.Bytes()); err != nil {
		return fmt.Errorf("perturb diagnostics: %w", err)
	}
	js, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("perturb diagnostics: %w", err)
	}
	return writeFileAtomic(filepath.Join(d.dir, diagFileBase(w.st.Repeat, w.st.Step)+".json"), append(js, '\n'))
}

// captureUnperturbed captures the batch's masked gradients with a zero perturbation.
func (d *perturbDiag) captureUnperturbed(tu *tuning, params, x []float32, y []int, clip models.Clip) error {
	P, D := tu.p, tu.base.InputDim()
	mask := tu.curMask()
	zero := make([]float64, P)
	const chunk = 64
	for s0 := 0; s0 < len(y); s0 += chunk {
		c := min(chunk, len(y)-s0)
		grads, _, err := tu.net.PerSampleGrads(params, x[s0*D:(s0+c)*D], y[s0:s0+c], c)
		if err != nil {
			return err
		}
		for s := 0; s < c; s++ {
			d.capture(s0+s, maskedF64(grads[s*P:(s+1)*P], mask), zero, clip)
		}
	}
	return nil
}

func finitePtr(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

var reDiagJSON = regexp.MustCompile(`^r(\d+)-step(\d{4,})\.json$`)

// diagDir is dir's perturb-diag subdirectory when it has one (dir is a run
// directory), else dir.
func diagDir(dir string) string {
	if fi, err := os.Stat(filepath.Join(dir, PerturbDiagDir)); err == nil && fi.IsDir() {
		return filepath.Join(dir, PerturbDiagDir)
	}
	return dir
}

// ReadPerturbDiag reads the step records of a diagnostics directory (a run
// directory's perturb-diag, or the run directory itself), sorted by repeat and step.
// It checks that each repeat's steps run 1, 2, … without a gap and that each
// record's arrays file is there.
func ReadPerturbDiag(dir string) ([]PerturbDiagStep, error) {
	dir = diagDir(dir)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("perturb diagnostics: %w", err)
	}
	var recs []PerturbDiagStep
	for _, e := range ents {
		m := reDiagJSON.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		path := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("perturb diagnostics: %w", err)
		}
		var r PerturbDiagStep
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("perturb diagnostics %s: %w", path, err)
		}
		rep, _ := strconv.Atoi(m[1])
		step, _ := strconv.Atoi(m[2])
		if r.Repeat != rep || r.Step != step || r.Samples < 0 || r.Vectors < 0 || r.Vectors > r.Samples ||
			r.Columns < 1 || r.Columns > r.Params || r.Arrays != diagFileBase(rep, step)+".npz" {
			return nil, fmt.Errorf("perturb diagnostics %s: record (repeat %d, step %d, %d samples, %d vectors, %d of %d columns, arrays %q) does not fit its name",
				path, r.Repeat, r.Step, r.Samples, r.Vectors, r.Columns, r.Params, r.Arrays)
		}
		if _, err := os.Stat(filepath.Join(dir, r.Arrays)); err != nil {
			return nil, fmt.Errorf("perturb diagnostics %s: its arrays: %w", path, err)
		}
		recs = append(recs, r)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("perturb diagnostics: %s holds no r<repeat>-step<t>.json records (train with --perturb-diag N)", dir)
	}
	sort.Slice(recs, func(i, j int) bool {
		if recs[i].Repeat != recs[j].Repeat {
			return recs[i].Repeat < recs[j].Repeat
		}
		return recs[i].Step < recs[j].Step
	})
	want := 1
	for i, r := range recs {
		if i > 0 && r.Repeat != recs[i-1].Repeat {
			want = 1
		}
		if r.Step != want {
			return nil, fmt.Errorf("perturb diagnostics %s: repeat %d has step %d where step %d was expected (a step is missing)", dir, r.Repeat, r.Step, want)
		}
		want++
	}
	return recs, nil
}

// ReadPerturbDiagArrays reads step rec's arrays from dir (as ReadPerturbDiag) and
// checks their shapes against rec.
func ReadPerturbDiagArrays(dir string, rec PerturbDiagStep) (*PerturbDiagArrays, error) {
	path := filepath.Join(diagDir(dir), rec.Arrays)
	arrs, err := npy.ReadNPZFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("perturb diagnostics: %s is missing", path)
	}
	if err != nil {
		return nil, fmt.Errorf("perturb diagnostics %s: %w", path, err)
	}
	out := &PerturbDiagArrays{N: rec.Samples, M: rec.Vectors, K: rec.Columns}
	get := func(name, dtype string, shape ...int) ([]float64, error) {
		a := arrs[name]
		if a == nil {
			return nil, fmt.Errorf("perturb diagnostics %s: no array %q", path, name)
		}
		if a.Dtype != dtype || !slices.Equal(a.Shape, shape) {
			return nil, fmt.Errorf("perturb diagnostics %s: %q is %s %v, want %s %v", path, name, a.Dtype, a.Shape, dtype, shape)
		}
		return a.Data, nil
	}
	for _, a := range []struct {
		name string
		dst  *[]float64
	}{{"base_norm", &out.BaseNorm}, {"perturb_norm", &out.PerturbNorm}, {"final_norm", &out.FinalNorm}, {"cosine", &out.Cosine}} {
		if *a.dst, err = get(a.name, "<f8", rec.Samples); err != nil {
			return nil, err
		}
	}
	for _, a := range []struct {
		name string
		dst  *[]float64
	}{{"base", &out.Base}, {"perturb", &out.Perturb}, {"final", &out.Final}} {
		if *a.dst, err = get(a.name, "<f4", rec.Vectors, rec.Columns); err != nil {
			return nil, err
		}
	}
	c, err := get("columns", "<i8", rec.Columns)
	if err != nil {
		return nil, err
	}
	for _, v := range c {
		out.Columns = append(out.Columns, int(v))
	}
	return out, nil
}
