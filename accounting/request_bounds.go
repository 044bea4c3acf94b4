package accounting

import (
	"errors"
	"fmt"

	"github.com/dpfil/dpfil/internal/jsonfloat"
)

// ReRoReport is the ReRo bound of a DP-SGD run (Hayes, Mahloujifar & Balle 2023,
// "Bounding training data reconstruction in DP-SGD", Sec. 3). Gamma, the headline,
// is a rigorous upper bound (no sampling error); the Monte Carlo estimate of
// Hayes et al., with its confidence interval, sits beside it as a check.
type ReRoReport struct {
	Q     float64 `json:"q"`
	Sigma float64 `json:"sigma"`
	Steps int     `json:"steps"`
	Kappa float64 `json:"kappa"`
	// Gamma is the number to read: at q = 1 the closed form (exact); otherwise the
	// smaller of the rigorous upper bounds GammaTradeoff and GammaRDP. GammaMethod
	// names which one it is.
	Gamma       float64 `json:"gamma"`
	GammaMethod string  `json:"gamma_method"`
	Advantage   float64 `json:"advantage"` // (Gamma − κ)/(1 − κ)
	// GammaTradeoff is the bound from the PLD trade-off curve (a rigorous upper
	// bound) and GammaTradeoffLower its discretisation's lower end (the exact γ lies
	// between them); null when the PLD could not be composed (TradeoffNote says why).
	// Adjacency add-remove, Poisson sampling, as Hayes et al.
	GammaTradeoff      *float64 `json:"gamma_tradeoff"`
	GammaTradeoffLower *float64 `json:"gamma_tradeoff_lower"`
	TradeoffNote       string   `json:"tradeoff_note,omitempty"`
	// GammaExact is the q = 1 closed form Φ(√T/σ − Φ⁻¹(1 − κ)) (nil when q < 1).
	GammaExact *float64 `json:"gamma_exact,omitempty"`
	GammaRDP   float64  `json:"gamma_rdp"` // min_α (κ e^{ε_α})^{(α−1)/α}, a rigorous upper bound
	RDPOrder   float64  `json:"rdp_order"`
	// Fano is the Fano bound of Guo, Sablayrolles & Sanjabi (2022b) for the uniform
	// prior of K = 1/κ points (null when 1/κ is not an integer ≥ 2; FanoNote says so).
	Fano     *FanoBound `json:"fano"`
	FanoNote string     `json:"fano_note,omitempty"`
	// MonteCarlo is Hayes et al.'s estimate with its confidence interval, a check of
	// Gamma (null when it was not run: MonteCarloSkipped says why).
	MonteCarlo        *ReRoResult `json:"monte_carlo"`
	MonteCarloSkipped string      `json:"monte_carlo_skipped,omitempty"`
	Seed              uint64      `json:"seed"`
	// Warning is set when the Monte Carlo interval misses the exact γ's bracket.
	Warning string `json:"warning,omitempty"`
}

// DefaultReRoMaxDraws is the default cap on the Monte Carlo's normal draws
// (Steps·(Samples + MuSamples); about 10² s of one core).
const DefaultReRoMaxDraws = 1e10

// ReRoRequest asks ReRoBounds for the ReRo bounds of a run: the rigorous bounds
// always, the Monte Carlo check of ReRoConfig unless skipped.
type ReRoRequest struct {
	ReRoConfig
	// SkipMonteCarlo leaves the Monte Carlo out.
	SkipMonteCarlo bool
	// MaxDraws caps the Monte Carlo's cost, Steps·(Samples + MuSamples) normal draws
	// (Samples + MuSamples at q = 1); above it the Monte Carlo is skipped and the
	// report says so. 0: DefaultReRoMaxDraws; negative: no cap.
	MaxDraws int64
	// Bound, if set, is called with the report holding the rigorous bounds before the
	// Monte Carlo starts (so that they can be shown at once).
	Bound func(*ReRoReport)
}

// ReRoBounds computes the rigorous ReRo bounds of the run of req first (the PLD
// trade-off curve, ReRoTradeoff; the RDP bound, ReRoRDP; the closed form at q = 1),
// then, unless skipped or over req.MaxDraws, Hayes et al.'s Monte Carlo estimate
// (ReRoMonteCarlo) as a check.
func ReRoBounds(req ReRoRequest) (*ReRoReport, error) {
	cfg := req.ReRoConfig
	err := checkFinite(namedValue{"q", cfg.Q}, namedValue{"sigma", cfg.Sigma}, namedValue{"kappa", cfg.Kappa}, namedValue{"confidence", cfg.Confidence})
	if err != nil {
		return nil, err
	}
	if err := checkQSigma(cfg.Q, cfg.Sigma); err != nil {
		return nil, fmt.Errorf("ReRo: %w", err)
	}
	if err := checkKappaReRo(cfg.Kappa); err != nil {
		return nil, fmt.Errorf("ReRo: %w", err)
	}
	if cfg.Steps < 1 {
		return nil, fmt.Errorf("ReRo: number of steps %d must be ≥ 1", cfg.Steps)
	}
	if cfg.Samples < 0 || cfg.MuSamples < 0 {
		return nil, fmt.Errorf("ReRo: samples %d and mu samples %d must be ≥ 0 (0: default)", cfg.Samples, cfg.MuSamples)
	}
	if cfg.Confidence != 0 && !(cfg.Confidence > 0 && cfg.Confidence < 1) {
		return nil, fmt.Errorf("ReRo: confidence %v must be in (0, 1)", cfg.Confidence)
	}
	r := &ReRoReport{Q: cfg.Q, Sigma: cfg.Sigma, Steps: cfg.Steps, Kappa: cfg.Kappa, Seed: cfg.Seed}
	if r.GammaRDP, r.RDPOrder, err = ReRoRDP(cfg.Q, cfg.Sigma, cfg.Steps, cfg.Kappa, nil); err != nil {
		return nil, fmt.Errorf("ReRo from RDP: %w", err)
	}
	r.Gamma, r.GammaMethod = r.GammaRDP, "RDP (Balle et al. 2022), a rigorous upper bound"
	if tr, err := ReRoTradeoff(ReRoRun{Q: cfg.Q, Sigma: cfg.Sigma, Steps: cfg.Steps, Kappa: cfg.Kappa}, nil); err != nil {
		r.TradeoffNote = "not computed: " + err.Error()
	} else {
		r.GammaTradeoff, r.GammaTradeoffLower = &tr.Gamma, &tr.GammaLower
		if tr.Gamma <= r.Gamma {
			r.Gamma, r.GammaMethod = tr.Gamma, "PLD trade-off curve, a rigorous upper bound"
		}
	}
	if cfg.Q == 1 {
		g, err := ReRoClosedForm(cfg.Sigma, cfg.Steps, cfg.Kappa)
		if err != nil {
			return nil, fmt.Errorf("ReRo closed form: %w", err)
		}
		r.GammaExact = &g
		r.Gamma, r.GammaMethod = g, "closed form (q = 1), exact"
	}
	if cfg.Q == 0 {
		r.Gamma, r.GammaMethod = cfg.Kappa, "q = 0: no leakage, exact"
	}
	r.Advantage = Advantage(r.Gamma, cfg.Kappa)
	if k := FanoPriorSize(cfg.Kappa); k == 0 {
		r.FanoNote = "not computed: needs a uniform prior, κ = 1/K with an integer K ≥ 2"
	} else if r.Fano, err = FanoDPSGD(cfg.Q, cfg.Sigma, cfg.Steps, k); err != nil {
		return nil, fmt.Errorf("ReRo: %w", err)
	}
	if req.Bound != nil {
		req.Bound(r)
	}
	if r.MonteCarloSkipped = reroSkipReason(req); r.MonteCarloSkipped != "" {
		return r, nil
	}
	mc, err := ReRoMonteCarlo(cfg)
	if err != nil {
		return nil, fmt.Errorf("ReRo Monte Carlo: %w", err)
	}
	r.MonteCarlo = &mc
	lo, hi := r.Gamma, r.Gamma
	if r.GammaTradeoffLower != nil && cfg.Q < 1 {
		lo = *r.GammaTradeoffLower
	}
	if r.GammaExact == nil && r.GammaTradeoff == nil {
		lo = 0 // only an upper bound to compare with
	}
	if mc.GammaLow > hi+1e-9 || mc.GammaHigh < lo-1e-9 {
		r.Warning = fmt.Sprintf("the Monte Carlo interval [%.6g, %.6g] misses the exact value's bracket [%.6g, %.6g]; trust gamma (rigorous)", mc.GammaLow, mc.GammaHigh, lo, hi)
	}
	return r, nil
}

// ReRoDraws is the Monte Carlo's cost in normal draws for cfg.
func ReRoDraws(cfg ReRoConfig) float64 {
	n, nmu := float64(cfg.Samples), float64(cfg.MuSamples)
	if n == 0 {
		n = reroDefaultSamples
	}
	if nmu == 0 {
		nmu = n
	}
	per := float64(cfg.Steps)
	if cfg.Q == 1 {
		per = 1 // Σ_t Z_t is drawn at once
	}
	return per * (n + nmu)
}

// reroSkipReason says why the Monte Carlo of req is not run ("" when it is).
func reroSkipReason(req ReRoRequest) string {
	switch {
	case req.SkipMonteCarlo:
		return "not requested"
	case req.Q == 0:
		return "q = 0: γ = κ exactly"
	}
	limit := float64(req.MaxDraws)
	if req.MaxDraws == 0 {
		limit = DefaultReRoMaxDraws
	}
	if d := ReRoDraws(req.ReRoConfig); req.MaxDraws >= 0 && d > limit {
		return fmt.Sprintf("it would take %.3g normal draws (steps × (samples + mu samples)), more than the cap of %.3g; lower the samples or raise the cap to run it", d, limit)
	}
	return ""
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
	var k, eps0, paperEps0, kc float64
	for _, v := range []struct {
		dst *float64
		f   func(KappaParams) (float64, error)
	}{{&k, Kappa}, {&eps0, KappaEpsilon0}, {&paperEps0, KappaClassicEpsilon0}, {&kc, KappaClassic}} {
		var err error
		if *v.dst, err = v.f(p); err != nil {
			return nil, fmt.Errorf("kappa: %w", err)
		}
	}
	return &KappaReport{Q: p.Q, Sigma: p.Sigma, ClipConstant: p.ClipConstant, DeltaF: p.DeltaF, Kappa: k, Epsilon0: eps0,
		Epsilon0Method: "analytic Gaussian mechanism (Balle & Wang 2018), one step under replace-one adjacency (sensitivity 2cC)", PaperEpsilon0: paperEps0, PaperKappa: kc}, nil
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
