package accounting

import (
	"fmt"
	"math"
)

// calMode is the ε a calibration step evaluates.
type calMode int

const (
	calRDP      calMode = iota // the RDP accountant's (cheap; brackets the PLD's)
	calReport                  // the ε EpsilonOf reports (PLD or the tighter of both)
	calAnalytic                // closed form for unsampled Gaussian releases (gaussianMu)
)

// CalibrateNoise returns the smallest noise multiplier σ/c (NoiseMultiplier; to a
// relative 1e-4) whose ε by EpsilonOf at opt is at most target, for the run whose
// ledger at a noise multiplier ledgerAt returns (DPSGD.LedgerAt for a DP-SGD run).
// Bisection in log σ; the returned σ meets the target. The cheap RDP solution
// brackets the PLD one (PLD ε ≤ RDP ε), so the PLD is only evaluated near the answer.
// When every step is a Gaussian release without subsampling (q = 1, or shuffled
// epochs accounted without amplification), the analytic Gaussian mechanism gives the
// composition's exact ε in closed form (PLD.gaussianMu): its solution, shifted by the
// PLD's discretisation offset there, brackets the PLD's answer to about 1e-4, so
// the PLD is evaluated about 4 times instead of about 13.
func CalibrateNoise(ledgerAt func(noiseMultiplier float64) (Ledger, error), opt ReportOptions, target float64) (float64, error) {
	if !(target > 0) || math.IsInf(target, 0) {
		return 0, fmt.Errorf("target ε = %v must be finite and > 0", target)
	}
	if err := checkDelta(opt.Delta); err != nil {
		return 0, err
	}
	l, err := ledgerAt(1)
	if err != nil {
		return 0, err
	}
	r, err := opt.resolve(l)
	if err != nil {
		return 0, err
	}
	eps := func(nm float64, m calMode) (float64, bool, error) { // ε of the mode; ok = defined
		l, err := ledgerAt(nm)
		if err != nil {
			return 0, false, err
		}
		if m == calAnalytic {
			a := NewPLDAccountant(r.adj, ShuffleRigorous, nil)
			if err := a.Compose(l.Event()); err != nil {
				return 0, false, err
			}
			return a.analyticEpsilon(opt.Delta)
		}
		es, err := epsilonsOf(l.Event(), r.adj, ShuffleRigorous, opt.Delta, m == calReport)
		if err != nil && m == calReport && r.acct == AccountantAuto {
			// As the report does (reportSetup.epsilons): where the PLD refuses the
			// setting (a privacy-loss range too wide at tiny noise, e.g. ε ≳ 500 at
			// q = 1, T = 100), auto reports the RDP bound, so that is the ε to meet.
			if rdpOnly, rerr := epsilonsOf(l.Event(), r.adj, ShuffleRigorous, opt.Delta, false); rerr == nil && rdpOnly.rdp != nil {
				es, err = rdpOnly, nil
			}
		}
		switch {
		case err != nil:
			return 0, false, err
		case m == calRDP && es.rdp == nil:
			return 0, false, nil
		case m == calRDP:
			return es.rdp.Epsilon, true, nil
		}
		acct := r.acct
		if acct == AccountantRDP { // only the bracket's accountant differs
			acct = AccountantAuto
		}
		if b := es.pick(acct); b != nil {
			return b.Epsilon, true, nil
		}
		return 0, false, errRDPNoBound
	}
	solve := func(m calMode, target, lo, hi float64) (float64, bool, error) {
		for { // hi meets the target
			e, ok, err := eps(hi, m)
			if err != nil || !ok {
				return 0, ok, err
			}
			if e <= target {
				break
			}
			lo, hi = hi, hi*4
			if hi > 1e6 {
				return 0, true, fmt.Errorf("no noise multiplier ≤ 1e6 reaches ε = %v", target)
			}
		}
		for { // lo misses it
			e, _, err := eps(lo, m)
			if err != nil {
				return 0, true, err
			}
			if e > target {
				break
			}
			hi, lo = lo, lo/2
			if lo < 1e-4 {
				return hi, true, nil
			}
		}
		for hi/lo > 1+1e-4 {
			mid := math.Sqrt(lo * hi)
			e, _, err := eps(mid, m)
			if err != nil {
				return 0, true, err
			}
			if e > target {
				lo = mid
			} else {
				hi = mid
			}
		}
		return hi, true, nil
	}
	// gaussianBracket narrows [lo, hi] around the reported ε's solution by the closed
	// form, when the run is unsampled Gaussian releases; else, or where the closed form
	// fails (e.g. beyond its range), it returns them as they are: it only shortens the
	// search. The PLD's ε exceeds the exact one by its discretisation offset, nearly
	// constant over a small range of σ, so the closed form's solution for target minus
	// the offset at its solution for target is the PLD's to within the bisection's
	// tolerance. solve checks the bracket and widens it where it is wrong.
	gaussianBracket := func(lo, hi float64) (float64, float64) {
		a0, ok, err := solve(calAnalytic, target, lo, hi)
		if err != nil || !ok {
			return lo, hi
		}
		e0, _, err := eps(a0, calReport)
		if err != nil {
			return lo, hi
		}
		x0, _, err := eps(a0, calAnalytic)
		if err != nil || !(target-(e0-x0) > 0) {
			return lo, hi
		}
		a1, ok, err := solve(calAnalytic, target-(e0-x0), a0, 2*a0)
		if err != nil || !ok {
			return lo, hi
		}
		return a1 / (1 + 1e-4) * (1 - 1e-5), a1 * (1 + 1e-5)
	}
	nm, ok, err := solve(calRDP, target, 0.5, 2)
	if err != nil {
		return 0, err
	}
	lo, hi := 0.5, 2.0
	switch {
	case r.acct == AccountantRDP && !ok:
		return 0, errRDPNoBound
	case r.acct == AccountantRDP:
		return nm, nil
	case ok: // PLD ≤ RDP: the RDP solution meets the target; the answer is at most it
		lo, hi = nm*0.8, nm
	}
	lo, hi = gaussianBracket(lo, hi)
	nm, _, err = solve(calReport, target, lo, hi)
	return nm, err
}
