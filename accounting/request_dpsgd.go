package accounting

import (
	"errors"
	"fmt"
)

// PLDRequest is a DP-SGD run for the PLD accountant: Steps steps of the subsampled
// Gaussian mechanism at rate Q and noise multiplier Sigma (sensitivity 1 per
// record), with ε reported at Delta.
type PLDRequest struct {
	Q, Sigma float64
	Steps    int
	Delta    float64
	// Adjacency and Sampling (SamplingPoisson, or SamplingUniform under ReplaceOne).
	Adjacency Adjacency
	Sampling  Sampling
	// Interval is the discretisation interval of the privacy loss, > 0
	// (DefaultPLDInterval is the usual choice).
	Interval float64
}

// PLDReport is the PLD accountant's answer to a PLDRequest, with the RDP
// accountant's ε of the same run beside it.
type PLDReport struct {
	Accountant string  `json:"accountant"` // "pld"
	Q          float64 `json:"q"`
	Sigma      float64 `json:"sigma"`
	Steps      int     `json:"steps"`
	Delta      float64 `json:"delta"`
	Adjacency  string  `json:"adjacency"`
	Sampling   string  `json:"sampling"`
	// Interval is the discretisation interval h of the privacy loss, TailMass the
	// mass truncated per discretisation and composition.
	Interval float64 `json:"interval"`
	TailMass float64 `json:"tail_mass"`
	// Epsilon is the rigorous upper bound (pessimistic discretisation): the number to
	// report. EpsilonLower is a rigorous lower bound on the ε of the same dominating
	// pairs (optimistic discretisation); their difference bounds the discretisation
	// error.
	Epsilon             float64 `json:"epsilon"`
	EpsilonLower        float64 `json:"epsilon_lower"`
	DiscretisationError float64 `json:"discretisation_error"`
	// EpsilonRDP is the RDP accountant's ε for the same run, for comparison (absent
	// where RDP has no ε bound, with RDPNote saying why).
	EpsilonRDP *float64 `json:"epsilon_rdp,omitempty"`
	RDPOrder   *float64 `json:"rdp_order,omitempty"`
	RDPNote    string   `json:"rdp_note,omitempty"`
}

// AccountPLD composes the run of req by its privacy-loss distributions (Koskela,
// Jälkö & Honkela 2020; Doroshenko, Ghazi, Kamath, Kumar & Manurangsi 2022 for the
// connect-the-dots discretisation) and converts to ε at req.Delta, with a rigorous
// upper and lower bound.
func AccountPLD(req PLDRequest) (*PLDReport, error) {
	if err := checkFinite(namedValue{"q", req.Q}, namedValue{"sigma", req.Sigma}); err != nil {
		return nil, err
	}
	if req.Steps < 0 {
		return nil, fmt.Errorf("steps = %d must be ≥ 0", req.Steps)
	}
	if err := checkFinite(namedValue{"delta", req.Delta}, namedValue{"interval", req.Interval}); err != nil {
		return nil, err
	}
	if req.Interval <= 0 {
		return nil, fmt.Errorf("interval = %v must be > 0", req.Interval)
	}
	g := GaussianEvent{NoiseMultiplier: req.Sigma}
	var ev Event
	switch {
	case req.Sampling == SamplingPoisson:
		ev = PoissonSampledEvent{Q: req.Q, Event: g}
	case req.Sampling == SamplingUniform && req.Adjacency == AddRemove:
		return nil, errors.New("uniform sampling needs replace-one adjacency (fixed-size batches are not defined under add/remove: the dataset size changes)")
	case req.Sampling == SamplingUniform:
		ev = SampledWithoutReplacementEvent{Q: req.Q, Event: g}
	default:
		return nil, fmt.Errorf("%s sampling has no subsampled PLD; use poisson or uniform (DPSGDRequest accounts shuffled epochs)", req.Sampling)
	}
	run := SelfComposedEvent{Event: ev, Count: req.Steps}
	e, err := composedEpsilon(NewPLDAccountant(req.Adjacency, ShuffleRigorous, &PLDConfig{Interval: req.Interval}), run, req.Delta)
	if err != nil {
		return nil, fmt.Errorf("PLD accountant: %w", err)
	}
	res := &PLDReport{Accountant: AccountantPLD, Q: req.Q, Sigma: req.Sigma, Steps: req.Steps, Delta: req.Delta,
		Adjacency: req.Adjacency.String(), Sampling: req.Sampling.String(), Interval: req.Interval,
		TailMass: DefaultPLDTailMass, Epsilon: e.Epsilon, EpsilonLower: *e.Lower, DiscretisationError: e.Epsilon - *e.Lower}
	ra := NewRDPAccountant(req.Adjacency, ShuffleRigorous, nil)
	if err := ra.Compose(run); err != nil {
		return nil, fmt.Errorf("RDP accountant: %w", err)
	}
	if re, err := ra.Epsilon(req.Delta); err != nil {
		res.RDPNote = err.Error()
	} else {
		res.EpsilonRDP, res.RDPOrder = &re.Epsilon, &re.Order
	}
	return res, nil
}

// DPSGDRequest is a DP-SGD run as a trainer sees it: Steps steps with batches of
// Batch out of N records drawn by Sampling, Gaussian noise of standard deviation
// Sigma·C on the sum of gradients clipped to norm c·C (c = ClipConstant).
type DPSGDRequest struct {
	N, Batch, Steps int
	Sigma           float64
	// TargetEpsilon, when set, replaces Sigma: the smallest σ whose reported ε at
	// Delta is at most *TargetEpsilon is solved for (CalibrateNoise).
	TargetEpsilon *float64
	Delta         float64
	// FILDelta is κ's failure probability δ_f (0: DefaultFILDelta(Steps, N)).
	FILDelta float64
	Sampling Sampling
	// ClipMode names the clipping (a label); ClipConstant is c (0: 1).
	ClipMode     string
	ClipConstant float64
	// Accountant is AccountantAuto (default), AccountantPLD or AccountantRDP;
	// Adjacency nil means DefaultAdjacency(Sampling).
	Accountant string
	Adjacency  *Adjacency
}

// DPSGDReport is every privacy number of a DP-SGD run (NewReport), with the noise
// that produced it.
type DPSGDReport struct {
	N               int     `json:"n"`
	Batch           int     `json:"batch"`
	Steps           int     `json:"steps"`
	Sigma           float64 `json:"sigma"`
	ClipMode        string  `json:"clip_mode"`
	ClipConstant    float64 `json:"clip_constant"`
	NoiseMultiplier float64 `json:"noise_multiplier"` // σ/c, what the accountants take
	// TargetEpsilon is set when sigma was solved for.
	TargetEpsilon *float64 `json:"target_epsilon,omitempty"`
	Privacy       *Report  `json:"privacy"`
	// Q is the sampling rate B/N and FILDelta the δ_f of κ (not part of the JSON).
	Q        float64 `json:"-"`
	FILDelta float64 `json:"-"`
}

// AccountDPSGD accounts the run of req exactly as the trainer reports it.
func AccountDPSGD(req DPSGDRequest) (*DPSGDReport, error) {
	// In the order of the fields, so that the same bad request always names the
	// same one.
	if req.N < 1 || req.Batch < 1 || req.Batch > req.N {
		return nil, fmt.Errorf("DP-SGD: batch %d must be in [1, N = %d]", req.Batch, req.N)
	}
	if req.Steps < 0 {
		return nil, fmt.Errorf("DP-SGD: steps %d must be ≥ 0", req.Steps)
	}
	vals := []namedValue{{"sigma", req.Sigma}}
	if req.TargetEpsilon != nil {
		vals = append(vals, namedValue{"target epsilon", *req.TargetEpsilon})
	}
	vals = append(vals, namedValue{"delta", req.Delta}, namedValue{"fil delta", req.FILDelta})
	if err := checkFinite(vals...); err != nil {
		return nil, err
	}
	c := req.ClipConstant
	if c == 0 {
		c = 1
	}
	opt := ReportOptions{Delta: req.Delta, Accountant: req.Accountant, FILDelta: req.FILDelta, ClipConstant: c, Adjacency: req.Adjacency}
	if opt.FILDelta == 0 && req.N > 0 && req.Steps > 0 {
		opt.FILDelta = DefaultFILDelta(req.Steps, req.N)
	}
	d := DPSGD{Sampling: req.Sampling, N: req.N, Batch: req.Batch, Steps: req.Steps, NoiseMultiplier: req.Sigma / c}
	res := &DPSGDReport{N: req.N, Batch: req.Batch, Steps: req.Steps, Sigma: req.Sigma, ClipMode: req.ClipMode, ClipConstant: c,
		FILDelta: opt.FILDelta}
	if req.TargetEpsilon != nil {
		nm, err := CalibrateNoise(d.LedgerAt, opt, *req.TargetEpsilon)
		if err != nil {
			return nil, fmt.Errorf("solve for sigma: %w", err)
		}
		d.NoiseMultiplier, res.Sigma = nm, nm*c
		res.TargetEpsilon = req.TargetEpsilon
	}
	res.NoiseMultiplier, res.Q = d.NoiseMultiplier, d.Q()
	l, err := d.Ledger()
	if err != nil {
		return nil, err
	}
	if res.Privacy, err = NewReport(l, opt); err != nil {
		return nil, err
	}
	return res, nil
}
