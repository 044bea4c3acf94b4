package plot

import (
	"math"
	"strconv"

	gplot "gonum.org/v1/plot"
)

// decadeTicks marks powers of ten on a log axis with exact labels ("1e-05", "0.01",
// "100"), labelling every n-th decade so that at most about 8 labels appear, with
// unlabelled minor ticks at 2…9 × 10^k when the range spans few decades. (gonum's
// LogTicks builds labels by repeated multiplication and prints 9.999999999999999e-05.)
type decadeTicks struct{}

var _ gplot.Ticker = decadeTicks{}

// Ticks implements gplot.Ticker; min and max must be positive.
func (decadeTicks) Ticks(min, max float64) []gplot.Tick {
	if !(min > 0) || !(max >= min) || math.IsInf(max, 0) {
		return nil
	}
	lo := int(math.Floor(math.Log10(min)))
	hi := int(math.Ceil(math.Log10(max)))
	step := (hi-lo)/8 + 1
	var ticks []gplot.Tick
	for k := lo; k <= hi; k++ {
		v := pow10(k)
		if v >= min && v <= max {
			label := ""
			if ((k%step)+step)%step == 0 {
				label = decadeLabel(k)
			}
			ticks = append(ticks, gplot.Tick{Value: v, Label: label})
		}
		if hi-lo <= 4 {
			for m := 2; m <= 9; m++ {
				if w := float64(m) * v; w >= min && w <= max {
					ticks = append(ticks, gplot.Tick{Value: w})
				}
			}
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

// pow10 is the float64 nearest to 10^k (math.Pow10 is off by an ulp for some
// negative k, which would print as 1.0000000000000001e-24).
func pow10(k int) float64 {
	v, err := strconv.ParseFloat("1e"+strconv.Itoa(k), 64)
	if err != nil { // out of range: ±Inf or 0, which no plot range reaches
		return math.Pow10(k)
	}
	return v
}
