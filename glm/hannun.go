package glm

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/dpfil/dpfil/internal/stats"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/stat"
)

// ExampleLoss returns training example i's unweighted loss ℓ(w*ᵀx̃_i, y_i) and the
// norm of its gradient w.r.t. the weights, ‖∇_wℓ‖ = |ℓ'|·‖x̃_i‖: the two heuristics
// Hannun et al. (2021, Fig. 4) compare η with.
func (m *Model) ExampleLoss(i int) (loss, gradNorm float64) {
	f, d1, _ := m.Config.Loss.derivs(m.Margin(i), m.y[i])
	return f, math.Abs(d1) * floats.Norm(m.design.RawRowView(i), 2)
}

// ClassEta is the η of the training examples of one label (Hannun et al. 2021, Fig. 2
// and Table 1): their mean and sample standard deviation (1/(n−1), as the paper's
// torch.std).
type ClassEta struct {
	Label int     `json:"label"`
	N     int     `json:"n"`
	Mean  float64 `json:"eta_mean"`
	Std   float64 `json:"eta_std"`
}

// EtaByClass groups η by the binary label y (η[k] belongs to example idx[k]) and
// returns the overall mean and sample std, then label 0 and label 1.
func EtaByClass(eta []float64, idx []int, y []float64) (all ClassEta, classes []ClassEta, err error) {
	if len(eta) != len(idx) || len(eta) < 2 {
		return all, nil, fmt.Errorf("eta by class: %d values for %d indices (need ≥ 2)", len(eta), len(idx))
	}
	groups := [2][]float64{}
	for k, i := range idx {
		if i < 0 || i >= len(y) || (y[i] != 0 && y[i] != 1) {
			return all, nil, fmt.Errorf("eta by class: example %d has no binary label", i)
		}
		groups[int(y[i])] = append(groups[int(y[i])], eta[k])
	}
	summ := func(label int, v []float64) ClassEta {
		c := ClassEta{Label: label, N: len(v), Mean: math.NaN(), Std: math.NaN()}
		if len(v) > 0 {
			c.Mean = stat.Mean(v, nil)
		}
		if len(v) > 1 {
			c.Std = stat.StdDev(v, nil)
		}
		return c
	}
	all = summ(-1, eta)
	return all, []ClassEta{summ(0, groups[0]), summ(1, groups[1])}, nil
}

// ranks returns the ranks 1..n of v, ties sharing their average rank.
func ranks(v []float64) []float64 {
	order := make([]int, len(v))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return v[order[a]] < v[order[b]] })
	r := make([]float64, len(v))
	for lo := 0; lo < len(order); {
		hi := lo + 1
		for hi < len(order) && v[order[hi]] == v[order[lo]] {
			hi++
		}
		avg := float64(lo+hi+1) / 2 // mean of the 1-based ranks lo+1 … hi
		for k := lo; k < hi; k++ {
			r[order[k]] = avg
		}
		lo = hi
	}
	return r
}

// Spearman is the Spearman rank correlation of x and y (Pearson correlation of their
// ranks, ties averaged).
func Spearman(x, y []float64) (float64, error) {
	if len(x) != len(y) || len(x) < 2 {
		return 0, fmt.Errorf("spearman: %d and %d values (need equal lengths ≥ 2)", len(x), len(y))
	}
	for k := range x {
		if math.IsNaN(x[k]) || math.IsNaN(y[k]) {
			return 0, errors.New("spearman: NaN value")
		}
	}
	return stat.Correlation(ranks(x), ranks(y), nil), nil
}

// EtaHeuristics compares η with the per-example loss and gradient norm (Hannun et
// al. 2021, Fig. 4: "a low η invariably implies a low loss", "high values of η exist
// throughout the range of both alternatives"). The deciles are the 10 % of examples
// with the lowest and with the highest η.
type EtaHeuristics struct {
	SpearmanLoss     float64 `json:"spearman_eta_loss"`
	SpearmanGradNorm float64 `json:"spearman_eta_grad_norm"`
	LossMedian       float64 `json:"loss_median"`
	LossMax          float64 `json:"loss_max"`
	// LowEtaLossMax is the largest loss in the lowest-η decile (small against LossMax:
	// low η implies low loss).
	LowEtaLossMax float64 `json:"low_eta_decile_loss_max"`
	// HighEtaLossMin and HighEtaLossMax span the losses of the highest-η decile (a
	// wide span: high η occurs at any loss).
	HighEtaLossMin    float64 `json:"high_eta_decile_loss_min"`
	HighEtaLossMax    float64 `json:"high_eta_decile_loss_max"`
	GradNormMax       float64 `json:"grad_norm_max"`
	LowEtaGradNormMax float64 `json:"low_eta_decile_grad_norm_max"`
}

// CompareEtaHeuristics computes EtaHeuristics from per-example η, loss and gradient
// norm (equal lengths, at least 10 values).
func CompareEtaHeuristics(eta, loss, gradNorm []float64) (EtaHeuristics, error) {
	var h EtaHeuristics
	n := len(eta)
	if n < 10 || len(loss) != n || len(gradNorm) != n {
		return h, fmt.Errorf("eta heuristics: %d η, %d losses, %d gradient norms (need equal lengths ≥ 10)", n, len(loss), len(gradNorm))
	}
	var err error
	if h.SpearmanLoss, err = Spearman(eta, loss); err != nil {
		return h, err
	}
	if h.SpearmanGradNorm, err = Spearman(eta, gradNorm); err != nil {
		return h, err
	}
	sorted := append([]float64(nil), loss...)
	sort.Float64s(sorted)
	h.LossMedian = stats.QuantileSorted(sorted, 0.5)
	h.LossMax = sorted[n-1]
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return eta[order[a]] < eta[order[b]] })
	dec := n / 10
	h.LowEtaLossMax, h.LowEtaGradNormMax = math.Inf(-1), math.Inf(-1)
	for _, i := range order[:dec] {
		h.LowEtaLossMax = math.Max(h.LowEtaLossMax, loss[i])
		h.LowEtaGradNormMax = math.Max(h.LowEtaGradNormMax, gradNorm[i])
	}
	h.HighEtaLossMin, h.HighEtaLossMax = math.Inf(1), math.Inf(-1)
	for _, i := range order[n-dec:] {
		h.HighEtaLossMin, h.HighEtaLossMax = math.Min(h.HighEtaLossMin, loss[i]), math.Max(h.HighEtaLossMax, loss[i])
	}
	h.GradNormMax = floats.Max(gradNorm)
	return h, nil
}
