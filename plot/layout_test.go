package plot

import (
	"image"
	"math"
	"strconv"
	"testing"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// TestLinearTicks: at least four labelled ticks, evenly spaced at a round step,
// inside the range, with labels that read back as their values, for ranges like
// the x axis of docs' Fig. 5 plots (gonum's DefaultTicks labels only 60 and 90 on
// the full-MNIST one).
func TestLinearTicks(t *testing.T) {
	for _, r := range [][2]float64{
		{56.6, 98.4},   // docs/img/fig5-full-mnist.png, percent
		{0.566, 0.984}, // the same as a fraction
		{12.4, 86.9},   // reduced Fig. 5
		{93.1, 97.6},   // a narrow sweep
		{0.9, 0.98},
		{-3, 2.5},
		{0, 1},
		{1e-6, 7e-6},
		{1000, 60000},
		{99.2, 99.25},
	} {
		ticks := LinearTicks{Labels: 4}.Ticks(r[0], r[1])
		var vals []float64
		for _, tk := range ticks {
			if tk.Value < r[0]-1e-12*math.Abs(r[0]) || tk.Value > r[1]+1e-12*math.Abs(r[1]) {
				t.Errorf("%v: tick %v outside the range", r, tk.Value)
			}
			if tk.Label == "" {
				continue
			}
			v, err := strconv.ParseFloat(tk.Label, 64)
			if err != nil || math.Abs(v-tk.Value) > 1e-9*math.Max(1, math.Abs(v)) {
				t.Errorf("%v: label %q for value %v", r, tk.Label, tk.Value)
			}
			vals = append(vals, tk.Value)
		}
		if len(vals) < 4 || len(vals) > 12 {
			t.Errorf("%v: %d labelled ticks %v, want 4 to 12", r, len(vals), vals)
			continue
		}
		step := vals[1] - vals[0]
		m := step / math.Pow(10, math.Floor(math.Log10(step)))
		if round := []float64{1, 2, 2.5, 5}; !slicesContainsNear(round, m) {
			t.Errorf("%v: step %v is not 1, 2, 2.5 or 5 × 10^k", r, step)
		}
		for i := 2; i < len(vals); i++ {
			if math.Abs(vals[i]-vals[i-1]-step) > 1e-9*step {
				t.Errorf("%v: uneven labels %v", r, vals)
			}
		}
		// Twice the step would leave fewer than four: the step is the largest that fits.
		if n := math.Floor(r[1]/(2*step)+1e-9) - math.Ceil(r[0]/(2*step)-1e-9) + 1; n >= 4 && m != 2 {
			t.Errorf("%v: step %v, but %v would still give %v labels", r, step, 2*step, n)
		}
	}
}

func labelled(ts []gplot.Tick) int {
	n := 0
	for _, tk := range ts {
		if tk.Label != "" {
			n++
		}
	}
	return n
}

func slicesContainsNear(xs []float64, v float64) bool {
	for _, x := range xs {
		if math.Abs(x-v) < 1e-9 {
			return true
		}
	}
	return false
}

// TestScatterLegendLayout: the scatter's legend (bound holds / violated, y = x) sits
// inside the data area, clear of the title band and of every point.
func TestScatterLegendLayout(t *testing.T) {
	var x, y []float64
	for i := 0; i < 60; i++ { // points along the diagonal, as glm invert's
		v := 0.03 * math.Pow(25, float64(i)/59)
		x, y = append(x, v), append(y, v*(0.7+0.6*math.Mod(float64(i)*0.37, 1)))
	}
	p, legend, _, err := scatter(x, y, ScatterOptions{LogX: true, LogY: true, Diagonal: true,
		XLabel: "FIL prediction: CRB", YLabel: "realised MSE", Title: "attribute inversion, σ=1e-05, 50 trials"})
	if err != nil {
		t.Fatal(err)
	}
	c := vgimg.NewWith(vgimg.UseImage(image.NewRGBA(image.Rect(0, 0, 600, 600))), vgimg.UseDPI(DPI))
	dc := draw.New(c)
	p.Draw(dc)
	titleBottom := dc.Max.Y - p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y - p.Title.Padding
	data := p.DataCanvas(dc)
	r := legend.Rect
	if r.Max.Y >= titleBottom || r.Min.X < data.Min.X || r.Max.X > data.Max.X || r.Min.Y < data.Min.Y || r.Max.Y > data.Max.Y {
		t.Errorf("legend %v: outside the data area %v or in the title band (from %v)", r, data.Rectangle, titleBottom)
	}
	trX, trY := p.Transforms(&data)
	for i := range x {
		if px, py := trX(x[i]), trY(y[i]); px >= r.Min.X && px <= r.Max.X && py >= r.Min.Y && py <= r.Max.Y {
			t.Errorf("legend covers the point (%v, %v)", x[i], y[i])
		}
	}
}

// TestScatterNoDiagonalNoLegend: without the y = x line there are no labelled entries,
// so no empty legend box is drawn; with it there is one.
func TestScatterNoDiagonalNoLegend(t *testing.T) {
	x, y := []float64{1, 2, 3}, []float64{1.5, 1, 4}
	for _, diag := range []bool{false, true} {
		p, legend, _, err := scatter(x, y, ScatterOptions{Diagonal: diag})
		if err != nil {
			t.Fatal(err)
		}
		c := vgimg.NewWith(vgimg.UseImage(image.NewRGBA(image.Rect(0, 0, 300, 300))), vgimg.UseDPI(DPI))
		p.Draw(draw.New(c))
		if drawn := legend.Rect != (vg.Rectangle{}); drawn != diag {
			t.Errorf("diagonal %v: legend box drawn %v (%v)", diag, drawn, legend.Rect)
		}
	}
}
