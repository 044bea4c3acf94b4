package glm

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dpfil/dpfil/internal/atomicfile"
	"github.com/dpfil/dpfil/internal/csvfile"
	"github.com/dpfil/dpfil/internal/jsonfloat"
	"github.com/dpfil/dpfil/plot"
	dfilfile "github.com/dpfil/dpfil/train/fil"
)

// FILExperiment computes every training example's FIL of an output-perturbed GLM
// (Guo et al. 2022, Sec. 7.1 and Fig. 2) and, with Columns, the attribute-level FIL
// of a subset S of pixels (Hannun et al. 2021, Sec. 3.1).
type FILExperiment struct {
	Setup Setup
	// Columns is a 0-based pixel column list such as "350-360,406" (ParseColumns);
	// empty: no attribute-level FIL.
	Columns string
	// WriteFeatures, if set, is a CSV file to write the model's training features to
	// (z1 … zK after PCA, else the pixels p0 …) with the model's target as the last
	// column: "label" (0/1) for the logistic loss, "target" (±1) for least squares.
	// It is the table 'glm invert --csv' reads.
	WriteFeatures string
	// Progress is called with the number of examples finished since the last call
	// and the number of examples; it may be called concurrently.
	Progress func(done, total int)
}

// FILReport is the outcome of RunFIL. Files are Out/glm_fil.csv (per example: label,
// dFIL, η, the MSE bound, the loss and the norm of its gradient), Out/glm_dfil.npy
// (the per-example dFIL in example order, as 'plot hist' reads it), the grids
// Out/glm_fil_top8.png and glm_fil_bottom8.png of the 8 highest- and lowest-dFIL
// images and glm_eta_top8.png / glm_eta_bottom8.png by η (Hannun et al. 2021, Fig. 3),
// the per-class η histogram Out/glm_eta_hist.png (their Fig. 2), and with Columns
// Out/glm_fil_attr.csv.
type FILReport struct {
	Release
	DFILMax           jsonfloat.Float `json:"dfil_max"`
	DFILMedian        jsonfloat.Float `json:"dfil_median"`
	DFILMean          jsonfloat.Float `json:"dfil_mean"`
	MSEBoundFILMin    jsonfloat.Inf   `json:"mse_bound_fil_min"`
	MSEBoundFILMedian jsonfloat.Inf   `json:"mse_bound_fil_median"`
	BoundAbove1       int             `json:"n_bound_above_1"` // examples with 1/dFIL > 1
	EtaMax            jsonfloat.Float `json:"eta_max"`
	EtaMedian         jsonfloat.Float `json:"eta_median"`
	// EtaMean and EtaStd (1/(n−1)) summarise η over the training set, EtaByClass per
	// label (Hannun et al. 2021, Table 1 and Fig. 2).
	EtaMean    jsonfloat.Float `json:"eta_mean"`
	EtaStd     jsonfloat.Float `json:"eta_std"`
	EtaByClass []ClassEta      `json:"eta_by_class"`
	// EtaHeuristics compares η with the per-example loss and gradient norm (Hannun
	// et al. 2021, Fig. 4).
	EtaHeuristics    EtaHeuristics   `json:"eta_heuristics"`
	LanczosMaxSteps  int             `json:"lanczos_max_steps"`
	LanczosFallbacks int             `json:"lanczos_dense_fallbacks"`
	LanczosNotConv   int             `json:"lanczos_not_converged"`
	FILSeconds       float64         `json:"fil_seconds"`
	AttrColumns      int             `json:"attr_columns,omitempty"`
	AttrDFILMax      jsonfloat.Float `json:"attr_dfil_max,omitempty"`
	AttrDFILMedian   jsonfloat.Float `json:"attr_dfil_median,omitempty"`
	AttrDFILMean     jsonfloat.Float `json:"attr_dfil_mean,omitempty"`
	Files            []string        `json:"files"`
}

// RunFIL fits the setup's model and computes the per-example (and attribute) FIL,
// writing the report's files.
func RunFIL(e FILExperiment) (*FILReport, error) {
	f, rel, err := e.Setup.FitRelease()
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	an, err := NewAnalysis(f.Model)
	if err != nil {
		return nil, err
	}
	var progress func(int)
	if e.Progress != nil {
		progress = func(n int) { e.Progress(n, f.Train.N) }
	}
	fil, err := an.PerExample(e.Setup.Sigma, FILOptions{Progress: progress, WithLabel: e.Setup.WithLabel})
	if err != nil {
		return nil, err
	}
	filSeconds := time.Since(t0).Seconds()
	res, err := f.writeFIL(fil)
	if err != nil {
		return nil, err
	}
	if e.Columns != "" {
		if err := f.attributeFIL(an, e.Columns, res); err != nil {
			return nil, err
		}
	}
	if e.WriteFeatures != "" {
		if err := f.writeFeatures(e.WriteFeatures); err != nil {
			return nil, err
		}
		res.Files = append(res.Files, e.WriteFeatures)
	}
	res.Release, res.FILSeconds = rel, filSeconds
	return res, nil
}

// writeFeatures writes the training features and labels as a Table CSV.
func (f *Fitted) writeFeatures(path string) error {
	t := &Table{N: f.Train.N, D: f.Train.D, X: f.Train.X, T: f.Train.Y, Names: make([]string, f.Train.D), Target: "label"}
	if f.Loss == LeastSquares {
		// The least-squares model's targets: t = 2y − 1.
		t.Target, t.T = "target", make([]float64, f.Train.N)
		for i, y := range f.Train.Y {
			t.T[i] = 2*y - 1
		}
	}
	for j := range t.Names {
		if f.Pre != nil {
			t.Names[j] = "z" + strconv.Itoa(j+1)
		} else {
			t.Names[j] = "p" + strconv.Itoa(j)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write features: %w", err)
	}
	if err := atomicfile.Write(path, t.WriteCSV); err != nil {
		return fmt.Errorf("write features %s: %w", path, err)
	}
	return nil
}

// writeFIL summarises the per-example FIL and writes its CSV and image grids.
func (f *Fitted) writeFIL(fil *FILResult) (*FILReport, error) {
	sd, se := SpreadOf(fil.DFIL), SpreadOf(fil.Eta)
	res := &FILReport{DFILMax: jsonfloat.Float(sd.Max), DFILMedian: jsonfloat.Float(sd.Median), DFILMean: jsonfloat.Float(sd.Mean),
		MSEBoundFILMin: jsonfloat.Inf(1 / sd.Max), MSEBoundFILMedian: jsonfloat.Inf(1 / sd.Median),
		EtaMax: jsonfloat.Float(se.Max), EtaMedian: jsonfloat.Float(se.Median),
		LanczosMaxSteps: fil.LanczosMaxSteps, LanczosFallbacks: fil.DenseFallbacks, LanczosNotConv: fil.NotConverged}
	rows := make([][]string, len(fil.DFIL))
	loss, grad := make([]float64, len(fil.Indices)), make([]float64, len(fil.Indices))
	g := csvfile.FormatFloat
	for k, i := range fil.Indices {
		if 1/fil.DFIL[k] > 1 {
			res.BoundAbove1++
		}
		loss[k], grad[k] = f.Model.ExampleLoss(i)
		rows[k] = []string{strconv.Itoa(i), strconv.Itoa(int(f.Train.Y[i])), g(fil.DFIL[k]), g(fil.Eta[k]), g(1 / fil.DFIL[k]), g(loss[k]), g(grad[k])}
	}
	path := filepath.Join(f.Setup.Out, "glm_fil.csv")
	if err := csvfile.Write(path, []string{"index", "label", "dfil", "eta", "mse_bound", "loss", "grad_norm"}, rows); err != nil {
		return nil, err
	}
	all, classes, err := EtaByClass(fil.Eta, fil.Indices, f.Train.Y)
	if err != nil {
		return nil, err
	}
	res.EtaMean, res.EtaStd, res.EtaByClass = jsonfloat.Float(all.Mean), jsonfloat.Float(all.Std), classes
	if res.EtaHeuristics, err = CompareEtaHeuristics(fil.Eta, loss, grad); err != nil {
		return nil, err
	}
	res.Files = append(res.Files, path)
	// The per-example dFIL as a run's dfil.npy (example order), for 'plot hist'
	// (Guo et al. 2022, Fig. 2).
	npy := filepath.Join(f.Setup.Out, "glm_dfil.npy")
	if err := dfilfile.Save(npy, fil.DFIL); err != nil {
		return nil, err
	}
	res.Files = append(res.Files, npy)
	top, bottom := Extremes(fil.DFIL, 8)
	etop, ebottom := Extremes(fil.Eta, 8)
	for _, part := range []struct {
		name, title, what string
		pos               []int
		v                 []float64
	}{{"glm_fil_top8.png", "highest dFIL (least private)", "dFIL", top, fil.DFIL}, {"glm_fil_bottom8.png", "lowest dFIL (most private)", "dFIL", bottom, fil.DFIL},
		{"glm_eta_top8.png", "largest η", "η", etop, fil.Eta}, {"glm_eta_bottom8.png", "smallest η", "η", ebottom, fil.Eta}} {
		imgs := make([][]float32, len(part.pos))
		caps := make([]string, len(part.pos))
		for k, pos := range part.pos {
			imgs[k] = Float32s(f.Images.Row(fil.Indices[pos]))
			caps[k] = fmt.Sprintf("%s %.3g", part.what, part.v[pos])
		}
		p := filepath.Join(f.Setup.Out, part.name)
		img, err := plot.ImageGrid(imgs, f.C, f.H, f.W, plot.GridOptions{Cols: 8, Title: part.title, Captions: caps, Scale: 3, Pad: 1})
		if err != nil {
			return nil, err
		}
		if err := plot.SavePNG(p, img); err != nil {
			return nil, err
		}
		res.Files = append(res.Files, p)
	}
	var groups [2][]float64
	for k, i := range fil.Indices {
		groups[int(f.Train.Y[i])] = append(groups[int(f.Train.Y[i])], fil.Eta[k])
	}
	hp, _, err := plot.GroupedHistogram(groups[:], []string{"label 0", "label 1"}, plot.HistOptions{Bins: 60, XLabel: "η",
		Title: fmt.Sprintf("per-example η by label (%s, %s)", f.Loss, f.Setup.Dataset)})
	if err != nil {
		return nil, err
	}
	hist := filepath.Join(f.Setup.Out, "glm_eta_hist.png")
	if err := plot.Save(hp, hist, 700, 420); err != nil {
		return nil, err
	}
	res.Files = append(res.Files, hist)
	return res, nil
}

// attributeFIL adds the attribute-level FIL of the columns to res and writes its CSV.
func (f *Fitted) attributeFIL(an *Analysis, columns string, res *FILReport) error {
	cols, err := ParseColumns(columns, f.Train.D)
	if err != nil {
		return err
	}
	attr, err := an.AttributeFIL(f.Setup.Sigma, cols, nil)
	if err != nil {
		return err
	}
	rows := make([][]string, len(attr.Indices))
	for k, i := range attr.Indices {
		rows[k] = []string{strconv.Itoa(i), strconv.Itoa(int(f.Train.Y[i])), csvfile.FormatFloat(attr.DFIL[k]), csvfile.FormatFloat(attr.Eta[k]), csvfile.FormatFloat(1 / attr.DFIL[k])}
	}
	p := filepath.Join(f.Setup.Out, "glm_fil_attr.csv")
	if err := csvfile.Write(p, []string{"index", "label", "dfil_attr", "eta_attr", "mse_bound_attr"}, rows); err != nil {
		return err
	}
	s := SpreadOf(attr.DFIL)
	res.AttrColumns = len(cols)
	res.AttrDFILMax, res.AttrDFILMedian, res.AttrDFILMean = jsonfloat.Float(s.Max), jsonfloat.Float(s.Median), jsonfloat.Float(s.Mean)
	res.Files = append(res.Files, p)
	return nil
}

// ParseColumns parses a pixel-column list such as "0-27,400,401" (0-based indices and
// inclusive ranges, no column twice) for d input features.
func ParseColumns(spec string, d int) ([]int, error) {
	var cols []int
	seen := map[int]bool{}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		lo, hi := part, part
		if a, b, ok := strings.Cut(part, "-"); ok {
			lo, hi = a, b
		}
		l, err1 := strconv.Atoi(strings.TrimSpace(lo))
		h, err2 := strconv.Atoi(strings.TrimSpace(hi))
		if err1 != nil || err2 != nil || l < 0 || h < l || h >= d {
			return nil, fmt.Errorf("columns: bad item %q (want 0-based indices or ranges in [0,%d))", part, d)
		}
		for c := l; c <= h; c++ {
			if seen[c] {
				return nil, fmt.Errorf("columns: column %d given twice", c)
			}
			seen[c] = true
			cols = append(cols, c)
		}
	}
	return cols, nil
}
