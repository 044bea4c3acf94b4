package glm

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"time"

	"github.com/dpfil/dpfil/internal/csvfile"
)

// IRFILExperiment runs IRFIL (Hannun et al. 2021, Algorithm 1) on a Setup's data.
type IRFILExperiment struct {
	Setup Setup
	Iters int // re-weighting iterations
	// Clamp, when given, is [lo, hi] with 0 < lo ≤ hi < ∞: the weights are clamped to
	// it after each update.
	Clamp    []float64
	Progress func(IRFILIteration)
}

// IRFILReport is the outcome of RunIRFIL. Files are Out/glm_irfil.csv (one row per
// iteration) and Out/glm_irfil_weights.csv (final weight and η per example).
type IRFILReport struct {
	Release
	Iters         int              `json:"iters"`
	ClampLo       float64          `json:"clamp_lo"`
	ClampHi       float64          `json:"clamp_hi"`
	SpreadInitial float64          `json:"spread_initial"` // std/mean of η of the unweighted model
	SpreadFinal   float64          `json:"spread_final"`
	Iterations    []IRFILIteration `json:"iterations"`
	Seconds       float64          `json:"seconds"`
	Files         []string         `json:"files"`
}

// Validate checks the iteration count and the clamp.
func (e IRFILExperiment) Validate() error {
	if len(e.Clamp) != 0 {
		if len(e.Clamp) != 2 || !(e.Clamp[0] > 0 && e.Clamp[1] >= e.Clamp[0]) || math.IsInf(e.Clamp[1], 0) {
			return fmt.Errorf("irfil: clamp needs lo,hi with 0 < lo ≤ hi < ∞, got %v", e.Clamp)
		}
	}
	if e.Iters < 0 {
		return fmt.Errorf("irfil: iterations must be ≥ 0, got %d", e.Iters)
	}
	return nil
}

// RunIRFIL fits the setup's model, runs IRFIL and writes the report's files.
func RunIRFIL(e IRFILExperiment) (*IRFILReport, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	f, rel, err := e.Setup.FitRelease()
	if err != nil {
		return nil, err
	}
	var lo, hi float64
	if len(e.Clamp) == 2 {
		lo, hi = e.Clamp[0], e.Clamp[1]
	}
	t0 := time.Now()
	res, err := IRFIL(f.Train, IRFILOptions{Config: f.Model.Config, Sigma: e.Setup.Sigma, Iters: e.Iters,
		ClampLo: lo, ClampHi: hi, Test: f.Test, Progress: e.Progress, WithLabel: e.Setup.WithLabel})
	if err != nil {
		return nil, err
	}
	out := &IRFILReport{Release: rel, Iters: e.Iters, ClampLo: lo, ClampHi: hi, Iterations: res.Iterations,
		SpreadInitial: res.Iterations[0].Spread, SpreadFinal: res.Iterations[len(res.Iterations)-1].Spread,
		Seconds: time.Since(t0).Seconds()}
	if err := out.write(f, res); err != nil {
		return nil, err
	}
	return out, nil
}

func (o *IRFILReport) write(f *Fitted, res *IRFILResult) error {
	g := csvfile.FormatFloat
	rows := make([][]string, len(res.Iterations))
	for k, it := range res.Iterations {
		rows[k] = []string{strconv.Itoa(it.Iter), g(it.EtaMean), g(it.EtaStd), g(it.Spread), g(it.EtaMin), g(it.EtaMax),
			g(it.WeightMin), g(it.WeightMax), strconv.Itoa(it.Clamped), g(it.TrainAcc), g(it.TestAcc), g(it.GradNorm)}
	}
	p := filepath.Join(f.Setup.Out, "glm_irfil.csv")
	if err := csvfile.Write(p, []string{"iter", "eta_mean", "eta_std", "spread", "eta_min", "eta_max", "weight_min", "weight_max", "clamped", "train_accuracy", "test_accuracy", "grad_norm"}, rows); err != nil {
		return err
	}
	o.Files = append(o.Files, p)
	wrows := make([][]string, len(res.Weights))
	for i, w := range res.Weights {
		wrows[i] = []string{strconv.Itoa(i), strconv.Itoa(int(f.Train.Y[i])), g(w), g(res.Eta[i])}
	}
	p = filepath.Join(f.Setup.Out, "glm_irfil_weights.csv")
	if err := csvfile.Write(p, []string{"index", "label", "weight", "eta"}, wrows); err != nil {
		return err
	}
	o.Files = append(o.Files, p)
	return nil
}
