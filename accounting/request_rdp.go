package accounting

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/dpfil/dpfil/internal/jsonfloat"
)

// ParseOrders parses a comma-separated list of Rényi orders, each finite and > 1,
// and returns them sorted; an empty string gives DefaultOrders.
func ParseOrders(s string) ([]float64, error) {
	if strings.TrimSpace(s) == "" {
		return DefaultOrders(), nil
	}
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, fmt.Errorf("orders: %q is not a number", f)
		}
		if err := checkOrder(v); err != nil {
			return nil, fmt.Errorf("orders: order %v must be finite and > 1", v)
		}
		out = append(out, v)
	}
	sort.Float64s(out)
	return out, nil
}

// ParseSchedule parses a heterogeneous run written as comma-separated segments
// "q:sigma:steps", e.g. "0.01:2:500,0.02:1:1000".
func ParseSchedule(s string) ([]Step, error) {
	var out []Step
	for _, seg := range strings.Split(s, ",") {
		p := strings.Split(strings.TrimSpace(seg), ":")
		if len(p) != 3 {
			return nil, fmt.Errorf("schedule: segment %q is not q:sigma:steps", seg)
		}
		q, err1 := strconv.ParseFloat(p[0], 64)
		sg, err2 := strconv.ParseFloat(p[1], 64)
		n, err3 := strconv.Atoi(p[2])
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("schedule: segment %q is not q:sigma:steps (numbers)", seg)
		}
		if !isFinite(q) || !isFinite(sg) {
			return nil, fmt.Errorf("schedule: segment %q has a non-finite value", seg)
		}
		out = append(out, Step{Q: q, Sigma: sg, Steps: n})
	}
	return out, nil
}

func isFinite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// namedValue is a number with the name an error message gives it.
type namedValue struct {
	name string
	v    float64
}

// checkFinite returns an error naming the first non-finite value, in the order
// given (so the same bad input always gives the same message).
func checkFinite(vals ...namedValue) error {
	for _, x := range vals {
		if !isFinite(x.v) {
			return fmt.Errorf("%s = %v must be finite", x.name, x.v)
		}
	}
	return nil
}

// RDPRequest is a DP-SGD run for the RDP accountant: Steps steps of the sampled
// Gaussian mechanism at rate Q and noise standard deviation Sigma (in units of the
// clipping norm C), or a heterogeneous Schedule of such segments instead.
type RDPRequest struct {
	Q, Sigma float64
	Steps    int
	Delta    float64
	// TargetEpsilon, when set, replaces Sigma: the smallest σ whose ε at Delta is at
	// most *TargetEpsilon is solved for (bisection to 1e-6 relative).
	TargetEpsilon *float64
	// Schedule, when not nil, replaces Q, Sigma and Steps.
	Schedule []Step
	// Orders are the Rényi orders minimised over (nil: DefaultOrders).
	Orders     []float64
	Conversion Conversion
	Adjacency  Adjacency
	// Sampling is SamplingPoisson or SamplingUniform (fixed-size batches drawn
	// without replacement, replace-one only); shuffled batches have no per-step RDP
	// (use DPSGDRequest).
	Sampling Sampling
	// ClipMode names the clipping (a label: "hard" or "smooth"); ClipConstant c
	// bounds the clipped gradient's norm by c·C, so the accountant takes σ/c (0: 1).
	ClipMode     string
	ClipConstant float64
}

// RDPReport is the RDP accountant's answer to an RDPRequest (Q and Sigma absent for
// a schedule).
type RDPReport struct {
	Q               *float64 `json:"q,omitempty"`
	Sigma           *float64 `json:"sigma,omitempty"`
	Schedule        []Step   `json:"schedule,omitempty"`
	Steps           int      `json:"steps"`
	Delta           float64  `json:"delta"`
	Accountant      string   `json:"accountant"` // rdp
	Adjacency       string   `json:"adjacency"`
	Sampling        string   `json:"sampling"`
	ClipMode        string   `json:"clip_mode"`
	ClipConstant    float64  `json:"clip_constant"`
	NoiseMultiplier *float64 `json:"noise_multiplier,omitempty"` // σ/c, what the accountant takes
	Conversion      string   `json:"conversion"`
	Epsilon         float64  `json:"epsilon"`
	Order           float64  `json:"order"`
	// RDPOrder2 is the order-2 RDP of the run under Adjacency, which
	// RDPOrder2Adjacency repeats: every number at the top level holds for Adjacency.
	// Theorem 1's MSE bound needs the replace-one ε₂ and is in Theorem1 only.
	RDPOrder2          float64        `json:"rdp_order2"`
	RDPOrder2Adjacency string         `json:"rdp_order2_adjacency"`
	Theorem1           Theorem1Report `json:"theorem1"`
	// TargetEpsilon is set when sigma was solved for.
	TargetEpsilon *float64 `json:"target_epsilon,omitempty"`
}

// AccountRDP composes the run of req in Rényi DP (Mironov, Talwar & Zhang 2019 for
// Poisson sampling; Zhu, Dong & Wang 2022 for sampling without replacement) and
// converts to (ε, δ)-DP at req.Delta, minimising over the orders. It also reports
// the order-2 RDP and Guo et al.'s Theorem 1 MSE bound (Theorem1Of).
func AccountRDP(req RDPRequest) (*RDPReport, error) {
	if req.Sampling == SamplingShuffle {
		return nil, errors.New("shuffled batches have no per-step RDP; account them per epoch (DPSGDRequest)")
	}
	c := req.ClipConstant
	if c == 0 {
		c = 1
	}
	if !(c > 0) || math.IsInf(c, 0) {
		return nil, fmt.Errorf("clipping constant c = %v must be finite and > 0", c)
	}
	if req.Schedule != nil {
		return accountSchedule(req, c)
	}
	if err := checkFinite(namedValue{"q", req.Q}, namedValue{"sigma", req.Sigma}); err != nil {
		return nil, err
	}
	if req.Steps < 0 {
		return nil, fmt.Errorf("steps = %d must be ≥ 0", req.Steps)
	}
	if err := checkFinite(namedValue{"delta", req.Delta}); err != nil {
		return nil, err
	}
	res := &RDPReport{Q: &req.Q, Steps: req.Steps, Delta: req.Delta}
	sigma := req.Sigma
	if req.TargetEpsilon != nil {
		var err error
		if sigma, err = solveSigmaRDP(req, c); err != nil {
			return nil, err
		}
		res.TargetEpsilon = req.TargetEpsilon
	}
	nm := sigma / c
	res.Sigma, res.NoiseMultiplier = &sigma, &nm
	if err := req.account(res, req.event(req.Q, nm, req.Steps), c); err != nil {
		return nil, err
	}
	return res, nil
}

// solveSigmaRDP is the σ (clipping constant included) reaching req.TargetEpsilon.
func solveSigmaRDP(req RDPRequest, c float64) (float64, error) {
	target := *req.TargetEpsilon
	if err := checkFinite(namedValue{"target epsilon", target}); err != nil {
		return 0, err
	}
	if req.Adjacency == ReplaceOne && req.Sampling == SamplingPoisson {
		return 0, errors.New("target epsilon: RDP has no ε bound under replace-one adjacency with Poisson sampling; use the PLD accountant")
	}
	if req.Adjacency == AddRemove && req.Sampling == SamplingUniform {
		return 0, errors.New("uniform sampling is accounted under replace-one adjacency only")
	}
	s, err := sigmaForEpsilon(sampledGaussianRun{Q: req.Q, Steps: req.Steps, Delta: req.Delta}, target, req.Orders, req.Conversion)
	if err != nil {
		return 0, fmt.Errorf("solve for sigma: %w", err)
	}
	if req.Sampling == SamplingUniform { // the dominating pair is the sampled Gaussian at σ/2
		s *= 2
	}
	return s * c, nil
}

// accountSchedule is AccountRDP for a schedule.
func accountSchedule(req RDPRequest, c float64) (*RDPReport, error) {
	if err := checkFinite(namedValue{"delta", req.Delta}); err != nil {
		return nil, err
	}
	res := &RDPReport{Schedule: req.Schedule, Delta: req.Delta}
	var ev ComposedEvent
	for i, s := range req.Schedule {
		if s.Steps < 0 {
			return nil, fmt.Errorf("schedule: segment %d: number of steps %d must be ≥ 0", i, s.Steps)
		}
		if _, err := SampledGaussianRDP(s.Q, s.Sigma, 2); err != nil {
			return nil, fmt.Errorf("schedule: segment %d: %w", i, err)
		}
		ev.Events = append(ev.Events, req.event(s.Q, s.Sigma/c, s.Steps))
		res.Steps += s.Steps
	}
	if err := req.account(res, ev, c); err != nil {
		return nil, fmt.Errorf("schedule: %w", err)
	}
	return res, nil
}

// event is the privacy event of n steps at rate q and noise multiplier nm.
func (req RDPRequest) event(q, nm float64, n int) Event {
	g := GaussianEvent{NoiseMultiplier: nm}
	var e Event = PoissonSampledEvent{Q: q, Event: g}
	if req.Sampling == SamplingUniform {
		e = SampledWithoutReplacementEvent{Q: q, Event: g}
	}
	return SelfComposedEvent{Event: e, Count: n}
}

// account composes ev into res: ε, rdp_order2 and Theorem 1.
func (req RDPRequest) account(res *RDPReport, ev Event, c float64) error {
	a := NewRDPAccountant(req.Adjacency, ShuffleRigorous, req.Orders)
	a.Conversion = req.Conversion
	if err := a.Compose(ev); err != nil {
		return fmt.Errorf("RDP accountant: %w", err)
	}
	b, err := a.Epsilon(res.Delta)
	if err != nil {
		return fmt.Errorf("RDP accountant: %w", err)
	}
	res.Epsilon, res.Order = b.Epsilon, b.Order
	res.RDPOrder2, res.RDPOrder2Adjacency = a.Order2(), req.Adjacency.String()
	if res.Theorem1, err = Theorem1Of(ev); err != nil {
		return err
	}
	res.Accountant, res.Adjacency, res.Sampling = AccountantRDP, req.Adjacency.String(), req.Sampling.String()
	res.ClipMode, res.ClipConstant, res.Conversion = req.ClipMode, c, req.Conversion.String()
	return nil
}

// Theorem1Of returns the input of Guo et al.'s Theorem 1 (Guo, Karrer, Chaudhuri &
// van der Maaten 2022, "Bounding training data reconstruction in private (deep)
// learning", Theorem 1) for the privacy event ev: the order-2 RDP ε₂ of the whole
// run under replace-one adjacency, which the theorem's proof needs, with its MSE
// bound 1/(4(e^{ε₂} − 1)) on [0,1]^d; and, for comparison only, the add-remove
// value of every step accounted as Poisson sampling, which the paper's code used.
func Theorem1Of(ev Event) (Theorem1Report, error) {
	t1 := NewRDPAccountant(ReplaceOne, ShuffleRigorous, nil)
	if err := t1.Compose(ev); err != nil {
		return Theorem1Report{}, fmt.Errorf("Theorem 1: %w", err)
	}
	paper := NewRDPAccountant(AddRemove, ShufflePoissonApprox, nil)
	if err := paper.Compose(asPoisson(ev)); err != nil {
		return Theorem1Report{}, fmt.Errorf("Theorem 1 (paper's value): %w", err)
	}
	r := Theorem1Report{Adjacency: ReplaceOne.String(),
		RDPOrder2: t1.Order2(), MSEBoundRDP: MSEBoundRDP(t1.Order2()),
		PaperRDPOrder2: paper.Order2(), PaperMSEBoundRDP: MSEBoundRDP(paper.Order2()), AntipodalNote: antipodalNote}
	if a, err := Order2AntipodalOf(ev); err != nil {
		r.AntipodalNote = "not computed: " + err.Error()
	} else {
		r.RDPOrder2Antipodal, r.MSEBoundRDPAntipodal = &a, jsonfloat.Ptr(MSEBoundRDP(a))
	}
	return r, nil
}
