package plot

import (
	"bytes"
	"testing"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

func TestDrawable(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"|D₋| = 999", "|D-| = 999"},
		{"I_S⁻¹", "I_S-¹"},             // ¹ is in the font
		{"x₀ … x₉", "x₀ … x₉"},         // subscript digits are in the font: kept
		{"σ²ε γ κ ≤ δ", "σ²ε γ κ ≤ δ"}, // all in the font: unchanged
		{"D₋ ∪ {z′}", "D- U {z′}"},
	} {
		if got := drawable(tc.in); got != tc.want {
			t.Errorf("drawable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestRenderUsesGlyphFallbacks: a figure whose title, axis label and legend say |D₋|
// renders to the same pixels as one that says |D-| (the font has no ₋: without the
// fallback it is dropped, and the two images differ).
func TestRenderUsesGlyphFallbacks(t *testing.T) {
	if len(MissingGlyphs("₋")) == 0 {
		t.Fatal("the figures' font has ₋: this test no longer tests the fallback")
	}
	render := func(label string) []byte {
		p := gplot.New()
		p.Title.Text = "success vs " + label
		p.X.Label.Text = label
		s, err := plotter.NewScatter(plotter.XYs{{X: 1, Y: 1}, {X: 2, Y: 3}})
		if err != nil {
			t.Fatal(err)
		}
		l := NewInsetLegend()
		l.Add(label+" = 4", s)
		p.Add(s, l)
		b, err := Render(p, "png", 320, 240)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	want := render("|D-|")
	if got := render("|D₋|"); !bytes.Equal(got, want) {
		t.Error("a figure labelled |D₋| does not render as one labelled |D-|")
	}
	if got := render("|D|"); bytes.Equal(got, want) {
		t.Error("|D| renders as |D-|: the comparison cannot tell the fallback from a dropped glyph")
	}
}
