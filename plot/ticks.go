package plot

import (
	"math"
	"slices"
	"strconv"

	gplot "gonum.org/v1/plot"
)

// DecadeTicks marks powers of ten on a log axis with exact labels ("1e-05", "0.01",
// "100"), labelling every n-th decade so that at most about 8 labels appear, with
// unlabelled minor ticks at 2…9 × 10^k when the range spans few decades. (gonum's
// LogTicks builds labels by repeated multiplication and prints 9.999999999999999e-05.)
type DecadeTicks struct{}

var _ gplot.Ticker = DecadeTicks{}

// Ticks implements gplot.Ticker; min and max must be positive. A range with fewer
// than three labelled decades (0.03–0.7 has only 0.1) also labels 2 and 5 × 10^k,
// and all of 2…9 × 10^k when that still gives fewer than three.
func (DecadeTicks) Ticks(min, max float64) []gplot.Tick {
	if !(min > 0) || !(max >= min) || math.IsInf(max, 0) {
		return nil
	}
	lo := int(math.Floor(math.Log10(min)))
	hi := int(math.Ceil(math.Log10(max)))
	step := (hi-lo)/8 + 1
	var ticks []gplot.Tick
	var mant []int // 1 for a decade, m for a minor tick at m × 10^k
	for k := lo; k <= hi; k++ {
		v := pow10(k)
		if v >= min && v <= max {
			label := ""
			if ((k%step)+step)%step == 0 {
				label = decadeLabel(k)
			}
			ticks, mant = append(ticks, gplot.Tick{Value: v, Label: label}), append(mant, 1)
		}
		if hi-lo <= 4 {
			for m := 2; m <= 9; m++ {
				if w := mantissa(m, k); w >= min && w <= max {
					ticks, mant = append(ticks, gplot.Tick{Value: w}), append(mant, m)
				}
			}
		}
	}
	labelled := func(ms ...int) int {
		n := 0
		for i, t := range ticks {
			if t.Label != "" || slices.Contains(ms, mant[i]) {
				n++
			}
		}
		return n
	}
	var more []int
	switch {
	case labelled() >= 3:
	case labelled(2, 5) >= 3:
		more = []int{2, 5}
	default:
		more = []int{2, 3, 4, 5, 6, 7, 8, 9}
	}
	for i := range ticks {
		if slices.Contains(more, mant[i]) {
			ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'g', -1, 64)
		}
	}
	return ticks
}

func decadeLabel(k int) string {
	if k >= -3 && k <= 4 {
		return strconv.FormatFloat(pow10(k), 'f', -1, 64)
	}
	return "1e" + strconv.Itoa(k)
}

// mantissa is the float64 nearest to m × 10^k.
func mantissa(m, k int) float64 {
	v, err := strconv.ParseFloat(strconv.Itoa(m)+"e"+strconv.Itoa(k), 64)
	if err != nil {
		return float64(m) * math.Pow10(k)
	}
	return v
}

// pow10 is the float64 nearest to 10^k (math.Pow10 is off by an ulp for some
// negative k, which would print as 1.0000000000000001e-24).
func pow10(k int) float64 {
	v, err := strconv.ParseFloat("1e"+strconv.Itoa(k), 64)
	if err != nil { // out of range: ±Inf or 0, which no plot range reaches
		return math.Pow10(k)
	}
	return v
}

// LinearTicks labels a linear axis at a round step (1, 2, 2.5 or 5 × 10^k): the
// largest such step that still gives at least Labels labelled ticks inside the range,
// with unlabelled minor ticks between them. (gonum's DefaultTicks aims at 3 labels
// and can leave only two on a range like 57–98.)
type LinearTicks struct {
	Labels int // minimum number of labelled ticks (values < 2 mean 2)
}

var _ gplot.Ticker = LinearTicks{}

// Ticks implements gplot.Ticker.
func (t LinearTicks) Ticks(lo, hi float64) []gplot.Tick {
	if !(hi > lo) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return nil
	}
	want := max(t.Labels, 2)
	count := func(step float64) int {
		return int(math.Floor(hi/step+1e-9) - math.Ceil(lo/step-1e-9) + 1)
	}
	// Start a decade above the range and shrink the step until enough labels fit.
	var (
		step           float64
		minors, digits int
	)
found:
	for k := int(math.Ceil(math.Log10(hi-lo))) + 1; k > -300; k-- {
		for _, m := range []struct {
			mant          float64
			minors, extra int // minor intervals per step; decimals beyond those of 10^k
		}{{5, 5, 0}, {2.5, 5, 1}, {2, 4, 0}, {1, 5, 0}} {
			if s := m.mant * pow10(k); count(s) >= want {
				step, minors, digits = s, m.minors, max(0, m.extra-k)
				break found
			}
		}
	}
	if step == 0 {
		return nil
	}
	var ticks []gplot.Tick
	for i := math.Ceil(lo/step - 1e-9); i <= math.Floor(hi/step+1e-9); i++ {
		v := i * step
		if v == 0 {
			v = 0 // not -0
		}
		ticks = append(ticks, gplot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', digits, 64)})
	}
	minor := step / float64(minors)
	for i := math.Ceil(lo/minor - 1e-9); i <= math.Floor(hi/minor+1e-9); i++ {
		if math.Mod(i, float64(minors)) != 0 {
			ticks = append(ticks, gplot.Tick{Value: i * minor})
		}
	}
	return ticks
}
