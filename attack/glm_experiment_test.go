package attack

import (
	"context"
	"encoding/csv"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"

	"github.com/dpfil/dpfil/glm"
	"github.com/dpfil/dpfil/train"
)

// TestCompareFILHandComputed checks the violation counts and the log-correlation on
// a case worked by hand: bounds (0.5, 2, 0.1, 4) and realised MSEs (0.4, 1, NaN, 8).
// Violations (MSE < bound): targets 0 and 1; bounds below 1: targets 0 and 2, of
// which target 0 is a violation; target 2 had no finite trial. The finite MSEs
// (0.4, 1, 8) have median 1 and mean 9.4/3, and the Pearson correlation of
// log(0.5, 2, 4) = ln2·(−1, 1, 2) with log(0.4, 1, 8) is 0.9168625718019517
// (computed separately from the definition).
func TestCompareFILHandComputed(t *testing.T) {
	c, err := CompareFIL([]float64{0.5, 2, 0.1, 4}, []float64{0.4, 1, math.NaN(), 8})
	if err != nil {
		t.Fatal(err)
	}
	if c.Violations != 2 || c.BoundBelow1 != 2 || c.ViolationsBelow1 != 1 || c.AllNonFinite != 1 {
		t.Fatalf("counts %+v", c)
	}
	if float64(c.MSEMedian) != 1 || math.Abs(float64(c.MSEMean)-9.4/3) > 1e-15 {
		t.Fatalf("median %v mean %v", c.MSEMedian, c.MSEMean)
	}
	if math.Abs(float64(c.LogCorr)-0.9168625718019517) > 1e-14 {
		t.Fatalf("log correlation %v", c.LogCorr)
	}
	// One usable pair: no correlation; no finite MSE: no median or mean.
	c, err = CompareFIL([]float64{0.5, 2}, []float64{0.4, math.NaN()})
	if err != nil || !math.IsNaN(float64(c.LogCorr)) || c.Violations != 1 {
		t.Fatalf("one pair: %+v, %v", c, err)
	}
	c, err = CompareFIL([]float64{0.5}, []float64{math.NaN()})
	if err != nil || !math.IsNaN(float64(c.MSEMedian)) || !math.IsNaN(float64(c.MSEMean)) || c.AllNonFinite != 1 {
		t.Fatalf("no finite MSE: %+v, %v", c, err)
	}
	if _, err := CompareFIL([]float64{1, 2}, []float64{1}); err == nil {
		t.Fatal("length mismatch accepted")
	}
}

func readCSVFile(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestRunGLMExperiment runs the attack on 120 examples and recounts the report's
// summary from the per-target CSV it wrote.
func TestRunGLMExperiment(t *testing.T) {
	out := t.TempDir()
	e := GLMExperiment{Setup: glm.Setup{Dataset: "mnist01-embedded", Loss: "logistic", Lambda: 1e-2, Sigma: 1e-3, Bias: true,
		TrainSubset: 120, Out: out}, Trials: 40, Targets: 30, Seed: 3}
	r, err := RunGLMExperiment(e)
	if err != nil {
		t.Fatal(err)
	}
	if r.N != 120 || r.Targets != 30 || r.Trials != 40 || r.NonFiniteTrials != 0 || len(r.Files) != 3 {
		t.Fatalf("report %+v", r)
	}
	rows := readCSVFile(t, filepath.Join(out, "glm_attack.csv"))[1:]
	if len(rows) != 30 {
		t.Fatalf("%d CSV rows", len(rows))
	}
	var viol, below, violBelow int
	var dfil []float64
	for _, row := range rows {
		d, _ := strconv.ParseFloat(row[2], 64)
		bound, _ := strconv.ParseFloat(row[3], 64)
		mse, _ := strconv.ParseFloat(row[4], 64)
		dfil = append(dfil, d)
		if mse < bound {
			viol++
		}
		if bound < 1 {
			below++
			if mse < bound {
				violBelow++
			}
		}
		if (row[7] == "true") != (mse < bound) {
			t.Fatalf("row %v: violation flag", row)
		}
	}
	if r.Violations != viol || r.BoundBelow1 != below || r.ViolationsBelow1 != violBelow {
		t.Fatalf("violations %d/%d/%d, CSV says %d/%d/%d", r.Violations, r.BoundBelow1, r.ViolationsBelow1, viol, below, violBelow)
	}
	sort.Float64s(dfil)
	med := (dfil[14] + dfil[15]) / 2
	if math.Abs(float64(r.DFILMedian)-med) > 1e-9*med || math.Abs(float64(r.BoundMedian)-1/med) > 1e-9/med || float64(r.DFILMax) < dfil[29]*(1-1e-9) {
		t.Fatalf("dFIL median %v max %v, CSV %v %v", r.DFILMedian, r.DFILMax, med, dfil[29])
	}
	bad := e
	bad.Setup.Bias = false
	if _, err := RunGLMExperiment(bad); err == nil {
		t.Fatal("no bias feature accepted")
	}
	bad = e
	bad.Setup.PCA = 20
	if err := bad.Validate(); err == nil {
		t.Fatal("PCA features accepted by the pixel-reconstruction attack")
	}
}

// TestRunRecoNNExperiment checks the report's summary against its own targets.
func TestRunRecoNNExperiment(t *testing.T) {
	cfg := train.DefaultConfig()
	cfg.Model, cfg.Steps, cfg.Batch, cfg.LR, cfg.Sigma, cfg.FILCoords = "mlp", 2, 0, 0.5, 0.5, 2
	out := t.TempDir()
	r, err := RunRecoNNExperiment(context.Background(), RecoNNExperiment{Config: cfg, Fixed: 9, Pool: 20, Targets: 3, Shadows: 6,
		Reconstructor: "ridge", Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if r.Pool != 20 || r.Config.Batch != 10 || len(r.Targets) != 3 || len(r.Files) != 2 {
		t.Fatalf("report %+v", r)
	}
	var b []float64
	mean := 0.0
	for _, tg := range r.Targets {
		b = append(b, float64(tg.BoundFIL))
		mean += float64(tg.MSE) / 3
	}
	sort.Float64s(b)
	if float64(r.MedianBoundFIL) != b[1] || math.Abs(float64(r.MeanMSE)-mean) > 1e-12 {
		t.Fatalf("median bound %v (targets %v), mean MSE %v want %v", r.MedianBoundFIL, b, r.MeanMSE, mean)
	}
	if rows := readCSVFile(t, filepath.Join(out, "reconn_targets.csv")); len(rows) != 4 {
		t.Fatalf("%d CSV rows", len(rows))
	}
	// The grid carries a title, row labels and captions: larger than the bare 2×3 grid
	// of 28×28 digits at 2× with 2-pixel gaps (176×118 px).
	fh, err := os.Open(filepath.Join(out, "reconn_targets.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if pc, err := png.DecodeConfig(fh); err != nil || pc.Width < 176+40 || pc.Height < 118+30 {
		t.Errorf("reconn_targets.png: %dx%d px (%v): no room for its labels", pc.Width, pc.Height, err)
	}
	for _, e := range []RecoNNExperiment{
		{Config: cfg, Fixed: 0, Targets: 1, Shadows: 2},
		{Config: cfg, Fixed: 9, Targets: 100000, Shadows: 2},
	} {
		if _, err := RunRecoNNExperiment(context.Background(), e); err == nil {
			t.Errorf("%+v accepted", e)
		}
	}
}
