package plot

import (
	"slices"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
)

// glyphFallback returns what is drawn in place of r when the figures' font has no
// glyph for it: labels use sub- and superscript signs and digits (|D₋|, I_S⁻¹) that
// the font lacks and that would otherwise be dropped or drawn as boxes.
func glyphFallback(r rune) (string, bool) {
	switch {
	case r == '₋' || r == '⁻':
		return "-", true
	case r == '₊' || r == '⁺':
		return "+", true
	case r == '₌' || r == '⁼':
		return "=", true
	case r >= '₀' && r <= '₉':
		return string('0' + (r - '₀')), true
	case r == '⁰':
		return "0", true
	case r >= '⁴' && r <= '⁹':
		return string('4' + (r - '⁴')), true
	case r == '∪':
		return "U", true
	}
	return "", false
}

// drawable returns s with every character the figures' font lacks and glyphFallback
// knows replaced by its fallback (characters with neither stay as they are).
func drawable(s string) string {
	ascii := true
	for i := 0; i < len(s) && ascii; i++ {
		ascii = s[i] < 0x80
	}
	if ascii { // the common case (ticks, most labels): the font has every ASCII glyph
		return s
	}
	missing := MissingGlyphs(s)
	if len(missing) == 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if fb, ok := glyphFallback(r); ok && slices.Contains(missing, r) {
			b.WriteString(fb)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// fallbackHandler is a text handler that measures and draws drawable(text).
type fallbackHandler struct{ text.Handler }

func (h fallbackHandler) Lines(txt string) []string { return h.Handler.Lines(drawable(txt)) }

func (h fallbackHandler) Box(txt string, fnt font.Font) (width, height, depth vg.Length) {
	return h.Handler.Box(drawable(txt), fnt)
}

func (h fallbackHandler) Draw(c vg.Canvas, txt string, sty text.Style, pt vg.Point) {
	h.Handler.Draw(c, drawable(txt), sty, pt)
}

// withFallback wraps h once (a handler already wrapped is returned as it is).
func withFallback(h text.Handler) text.Handler {
	if h == nil {
		h = gplot.DefaultTextHandler
	}
	if _, ok := h.(fallbackHandler); ok {
		return h
	}
	return fallbackHandler{h}
}

// useGlyphFallbacks makes every text of p (title, axis labels, tick labels, legend)
// go through drawable. Render calls it; plotters that draw their own text (the inset
// legend) set it themselves.
func useGlyphFallbacks(p *gplot.Plot) {
	p.TextHandler = withFallback(p.TextHandler)
	for _, sty := range []*text.Style{&p.Title.TextStyle, &p.X.Label.TextStyle, &p.Y.Label.TextStyle, &p.X.Tick.Label, &p.Y.Tick.Label, &p.Legend.TextStyle} {
		sty.Handler = withFallback(sty.Handler)
	}
}
