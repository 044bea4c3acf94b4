package plot

import (
	"image/color"
	"math"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// InsetLegend is a plotter that draws a legend inside the data area, framed on a
// white background, in the first corner (top right, top left, bottom right, bottom
// left) whose box covers none of the points and lines it was told to avoid (the
// corner covering the fewest when none is free). Inside the data area it can never
// reach the title band, which gonum's own legend, drawn against the top edge of the
// area below the title, visibly touches.
type InsetLegend struct {
	gplot.Legend
	avoid [][2]float64 // data coordinates to keep clear
	// Rect is where the box went at the last Plot call (for tests; empty when the
	// legend has no entries and draws nothing).
	Rect    vg.Rectangle
	entries int
}

// Add adds an entry (see gplot.Legend.Add) and counts it: a legend without entries
// draws no box.
func (l *InsetLegend) Add(name string, thumbs ...gplot.Thumbnailer) {
	l.Legend.Add(name, thumbs...)
	l.entries++
}

var _ gplot.Plotter = (*InsetLegend)(nil)

// legendInset is the gap between the box and the data area's edges; legendPad the
// gap between the box's frame and its entries.
const (
	legendInset = vg.Length(6)
	legendPad   = vg.Length(4)
)

// NewInsetLegend returns an empty inset legend (icons first, 10 pt text); add
// entries with Add and the places to keep clear with Avoid and AvoidLine.
func NewInsetLegend() *InsetLegend {
	l := &InsetLegend{Legend: gplot.NewLegend()}
	l.Top, l.Left = true, true // icons first, text after them
	l.TextStyle.Font.Size = vg.Points(10)
	l.TextStyle.Handler = withFallback(l.TextStyle.Handler)
	return l
}

// Avoid adds data points (x, y) to the places the box keeps clear.
func (l *InsetLegend) Avoid(pts ...[2]float64) { l.avoid = append(l.avoid, pts...) }

// AvoidLine adds points along the polyline pts (data coordinates) to the places the
// box keeps clear.
func (l *InsetLegend) AvoidLine(pts [][2]float64, log bool) {
	l.avoid = append(l.avoid, pts...)
	for i := 1; i < len(pts); i++ {
		a, b := pts[i-1], pts[i]
		for k := 1; k < 32; k++ {
			f := float64(k) / 32
			y := a[1] + f*(b[1]-a[1])
			if log && a[1] > 0 && b[1] > 0 {
				y = math.Exp(math.Log(a[1]) + f*(math.Log(b[1])-math.Log(a[1])))
			}
			l.avoid = append(l.avoid, [2]float64{a[0] + f*(b[0]-a[0]), y})
		}
	}
}

// size is the box's width and height.
func (l *InsetLegend) size(c draw.Canvas) (w, h vg.Length) {
	r := l.Legend.Rectangle(c)
	return r.Max.X - r.Min.X + 3*legendPad, r.Max.Y - r.Min.Y + 2*legendPad // text needs a little more on the right
}

// Plot implements gplot.Plotter.
func (l *InsetLegend) Plot(c draw.Canvas, p *gplot.Plot) {
	if l.entries == 0 {
		l.Rect = vg.Rectangle{}
		return
	}
	w, h := l.size(c)
	trX, trY := p.Transforms(&c)
	var pix []vg.Point
	for _, q := range l.avoid {
		if q[0] >= p.X.Min && q[0] <= p.X.Max && q[1] >= p.Y.Min && q[1] <= p.Y.Max {
			pix = append(pix, vg.Point{X: trX(q[0]), Y: trY(q[1])})
		}
	}
	minX, maxX := c.Min.X+legendInset, c.Max.X-legendInset-w
	minY, maxY := c.Min.Y+legendInset, c.Max.Y-legendInset-h
	corners := []vg.Point{{X: maxX, Y: maxY}, {X: minX, Y: maxY}, {X: maxX, Y: minY}, {X: minX, Y: minY}}
	best, bestN := 0, math.MaxInt
	for i, o := range corners {
		r := vg.Rectangle{Min: o, Max: vg.Point{X: o.X + w, Y: o.Y + h}}
		n := 0
		for _, q := range pix {
			if q.X >= r.Min.X-4 && q.X <= r.Max.X+4 && q.Y >= r.Min.Y-4 && q.Y <= r.Max.Y+4 {
				n++
			}
		}
		if n < bestN {
			best, bestN = i, n
		}
		if n == 0 {
			break
		}
	}
	o := corners[best]
	l.Rect = vg.Rectangle{Min: o, Max: vg.Point{X: o.X + w, Y: o.Y + h}}
	box := []vg.Point{l.Rect.Min, {X: l.Rect.Max.X, Y: l.Rect.Min.Y}, l.Rect.Max, {X: l.Rect.Min.X, Y: l.Rect.Max.Y}}
	c.FillPolygon(color.White, box)
	c.StrokeLines(draw.LineStyle{Color: color.Gray{Y: 160}, Width: vg.Points(0.6)}, append(box, box[0]))
	inner := vg.Rectangle{Min: vg.Point{X: o.X + legendPad, Y: o.Y + legendPad}, Max: vg.Point{X: o.X + w - legendPad, Y: o.Y + h - legendPad}}
	l.Legend.Draw(draw.Canvas{Canvas: c.Canvas, Rectangle: inner})
}
