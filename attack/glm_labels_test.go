package attack

import (
	"testing"

	"github.com/dpfil/dpfil/plot"
)

// TestFigureTextGlyphs: the glm-invert scatter's labels (and a title as the
// experiment formats it) use only characters the figures' font has; "I_S⁻¹" used
// the superscript minus, which it lacks.
func TestFigureTextGlyphs(t *testing.T) {
	for _, s := range []string{invertScatterXLabel, invertScatterYLabel,
		"attribute inversion, 350,351, σ=1e-05, 50 trials", "highest dFIL (least private)", "dFIL 1.23e+03"} {
		if m := plot.MissingGlyphs(s); len(m) > 0 {
			t.Errorf("label %q: the font has no glyph for %q", s, string(m))
		}
	}
}
