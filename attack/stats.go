package attack

import (
	"fmt"

	"gonum.org/v1/gonum/stat/distuv"
)

// ClopperPearson returns the exact (Clopper–Pearson) two-sided confidence interval at
// the given level for a binomial proportion with x successes in n trials:
// [B(α/2; x, n−x+1), B(1−α/2; x+1, n−x)] with B the Beta quantile, α = 1 − level,
// and the conventional 0 / 1 ends at x = 0 / x = n.
func ClopperPearson(x, n int, level float64) (lo, hi float64, err error) {
	if n < 1 || x < 0 || x > n {
		return 0, 0, fmt.Errorf("clopper-pearson: need 0 ≤ x ≤ n, n ≥ 1; got x = %d, n = %d", x, n)
	}
	if !(level > 0 && level < 1) {
		return 0, 0, fmt.Errorf("clopper-pearson: level %v outside (0, 1)", level)
	}
	a := 1 - level
	lo, hi = 0, 1
	if x > 0 {
		lo = distuv.Beta{Alpha: float64(x), Beta: float64(n - x + 1)}.Quantile(a / 2)
	}
	if x < n {
		hi = distuv.Beta{Alpha: float64(x + 1), Beta: float64(n - x)}.Quantile(1 - a/2)
	}
	return lo, hi, nil
}
