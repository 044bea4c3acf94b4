package accounting

import (
	"errors"
	"fmt"

	"github.com/dpfil/dpfil/internal/jsonfloat"
)

// ReRoReport is the ReRo bound of a DP-SGD run (Hayes, Mahloujifar & Balle 2023,
// "Bounding training data reconstruction in DP-SGD", Sec. 3): the Monte Carlo
// estimate with its confidence interval, the closed form at q = 1, the RDP-based
// bound, and the bound from the PLD trade-off curve.
type ReRoReport struct {
	Q     float64 `json:"q"`
	Sigma float64 `json:"sigma"`
	Steps int     `json:"steps"`
	Seed  uint64  `json:"seed"`
	ReRoResult
	// GammaTradeoff is the ReRo bound from the PLD trade-off curve (no sampling
	// error; a rigorous upper bound) and GammaTradeoffLower its discretisation's
	// lower end. Adjacency add-remove, Poisson sampling, as Hayes et al.
	GammaTradeoff      float64 `json:"gamma_tradeoff"`
	GammaTradeoffLower float64 `json:"gamma_tradeoff_lower"`
}

// ReRoBounds runs ReRoMonteCarlo and ReRoTradeoff on the run of cfg.
func ReRoBounds(cfg ReRoConfig) (*ReRoReport, error) {
	err := checkFinite(namedValue{"q", cfg.Q}, namedValue{"sigma", cfg.Sigma}, namedValue{"kappa", cfg.Kappa}, namedValue{"confidence", cfg.Confidence})
	if err != nil {
		return nil, err
	}
	res, err := ReRoMonteCarlo(cfg)
	if err != nil {
		return nil, fmt.Errorf("ReRo: %w", err)
	}
	tr, err := ReRoTradeoff(ReRoRun{Q: cfg.Q, Sigma: cfg.Sigma, Steps: cfg.Steps, Kappa: cfg.Kappa}, nil)
	if err != nil {
		return nil, fmt.Errorf("ReRo from the trade-off curve: %w", err)
	}
	return &ReRoReport{Q: cfg.Q, Sigma: cfg.Sigma, Steps: cfg.Steps, Seed: cfg.Seed, ReRoResult: res,
		GammaTradeoff: tr.Gamma, GammaTradeoffLower: tr.GammaLower}, nil
}

// KappaRequest asks for the FIL subsampling factor κ; DeltaF 0 means
// DefaultFILDelta(Steps, N).
type KappaRequest struct {
	KappaParams
	Steps, N int
}

// KappaReport is κ with its ε₀, beside the paper's classical values.
type KappaReport struct {
	Q            float64 `json:"q"`
	Sigma        float64 `json:"sigma"`
	ClipConstant float64 `json:"clip_constant"`
	DeltaF       float64 `json:"delta_f"`
	Kappa        float64 `json:"kappa"`
	Epsilon0     float64 `json:"epsilon0"` // one step's ε₀ at δ_f (replace-one)
	// Epsilon0Method names how ε₀ was computed.
	Epsilon0Method string `json:"epsilon0_method"`
	// PaperEpsilon0 and PaperKappa use the classical Gaussian-mechanism formula
	// (valid only when PaperEpsilon0 < 1), as the paper did.
	PaperEpsilon0 float64 `json:"paper_epsilon0_classical"`
	PaperKappa    float64 `json:"paper_kappa_classical"`
}

// AccountKappa computes κ (Kappa), its ε₀ and the paper's classical values.
func AccountKappa(req KappaRequest) (*KappaReport, error) {
	p := req.KappaParams
	if p.DeltaF == 0 {
		if req.Steps <= 0 || req.N <= 0 {
			return nil, errors.New("kappa: give delta_f, or the number of steps and records (both > 0) for δ_f = 1/(T·N)")
		}
		p.DeltaF = DefaultFILDelta(req.Steps, req.N)
	}
	k, err := Kappa(p)
	if err != nil {
		return nil, fmt.Errorf("kappa: %w", err)
	}
	eps0, err := KappaEpsilon0(p)
	if err != nil {
		return nil, fmt.Errorf("kappa: %w", err)
	}
	paperEps0, err := KappaClassicEpsilon0(p)
	if err != nil {
		return nil, fmt.Errorf("kappa: %w", err)
	}
	kc, err := KappaClassic(p)
	if err != nil {
		return nil, fmt.Errorf("kappa: %w", err)
	}
	return &KappaReport{Q: p.Q, Sigma: p.Sigma, ClipConstant: p.ClipConstant, DeltaF: p.DeltaF, Kappa: k, Epsilon0: eps0,
		Epsilon0Method: "analytic Gaussian mechanism (Balle & Wang 2018)", PaperEpsilon0: paperEps0, PaperKappa: kc}, nil
}

// MSERequest asks for MSE lower bounds on reconstruction; a nil field is not asked
// for. PriorFisherTrace needs DFIL (then the prior mean dFIL) and D.
type MSERequest struct {
	// Eps2 is the order-2 RDP of the whole run (Theorem 1), Diameter the
	// per-coordinate diameter of the data space (1 for [0,1]^d).
	Eps2     *float64
	Diameter float64
	// DFIL is a sample's dFIL = Tr(I)/d (Theorem 2), or its mean over the prior.
	DFIL *float64
	// PriorFisherTrace is the trace of the prior's Fisher information, D the data
	// dimension (van Trees).
	PriorFisherTrace *float64
	D                int
}

// MSEReport holds the requested bounds; absent ones were not requested, null ones
// are +∞ (no leakage).
type MSEReport struct {
	Eps2             *float64 `json:"eps2,omitempty"`
	Diameter         *float64 `json:"diameter,omitempty"`
	DFIL             *float64 `json:"dfil,omitempty"`
	PriorFisherTrace *float64 `json:"prior_fisher_trace,omitempty"`
	D                int      `json:"d,omitempty"`
	MSEBoundRDP      *float64 `json:"mse_bound_rdp,omitempty"`
	MSEBoundFIL      *float64 `json:"mse_bound_fil,omitempty"`
	MSEBoundVanTrees *float64 `json:"mse_bound_van_trees,omitempty"`
}

// MSEBounds computes the bounds req asks for: Theorem 1 (MSEBoundRDPGeneral) and
// Theorem 2 (MSEBoundFIL) of Guo, Karrer, Chaudhuri & van der Maaten (2022), and the
// van Trees inequality for a biased attacker (MSEBoundVanTrees; Edmunds 2024, eq. 1.3).
func MSEBounds(req MSERequest) (*MSEReport, error) {
	if req.Eps2 == nil && req.DFIL == nil {
		return nil, errors.New("MSE bounds: give eps2 and/or dfil")
	}
	if req.PriorFisherTrace != nil && req.DFIL == nil {
		return nil, errors.New("MSE bounds: the prior Fisher trace needs dfil (the prior mean dFIL)")
	}
	var res MSEReport
	if req.Eps2 != nil {
		b, err := MSEBoundRDPGeneral(*req.Eps2, []float64{req.Diameter}, nil, 0)
		if err != nil {
			return nil, fmt.Errorf("Theorem 1 bound: %w", err)
		}
		res.Eps2, res.Diameter, res.MSEBoundRDP = req.Eps2, &req.Diameter, jsonfloat.Ptr(b)
	}
	if req.DFIL != nil {
		dfil := *req.DFIL
		if err := checkFinite(namedValue{"dfil", dfil}); err != nil {
			return nil, err
		}
		if dfil < 0 {
			return nil, fmt.Errorf("dfil = %v must be ≥ 0", dfil)
		}
		res.DFIL, res.MSEBoundFIL = req.DFIL, jsonfloat.Ptr(MSEBoundFIL(dfil))
	}
	if req.PriorFisherTrace != nil {
		b, err := MSEBoundVanTrees(*req.DFIL, *req.PriorFisherTrace, req.D)
		if err != nil {
			return nil, fmt.Errorf("van Trees bound: %w", err)
		}
		res.PriorFisherTrace, res.D, res.MSEBoundVanTrees = req.PriorFisherTrace, req.D, jsonfloat.Ptr(b)
	}
	return &res, nil
}

// DFILFilesReport summarises per-sample dFIL files merged by the per-sample mean.
type DFILFilesReport struct {
	Files   []string   `json:"files"`
	Runs    int        `json:"runs"`
	Summary FILSummary `json:"summary"`
	Out     string     `json:"out,omitempty"`
}

// SummarizeDFILFiles reads the per-sample dFIL vectors of repeated runs (.npy files
// as SaveDFIL writes them), merges them by the per-sample mean, writes the merged
// vector to out unless out is "", and summarises it (SummarizeDFIL).
func SummarizeDFILFiles(files []string, out string) (*DFILFilesReport, error) {
	if len(files) == 0 {
		return nil, errors.New("dFIL summary: no files")
	}
	runs := make([][]float64, 0, len(files))
	for _, p := range files {
		x, err := LoadDFIL(p)
		if err != nil {
			return nil, err
		}
		runs = append(runs, x)
	}
	mean, err := MeanDFIL(runs...)
	if err != nil {
		return nil, fmt.Errorf("merge dFIL runs: %w", err)
	}
	if out != "" {
		if err := SaveDFIL(out, mean); err != nil {
			return nil, err
		}
	}
	return &DFILFilesReport{Files: files, Runs: len(files), Summary: SummarizeDFIL(mean), Out: out}, nil
}
