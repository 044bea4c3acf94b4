package enumtext

import (
	"strings"
	"testing"
)

type color int

var colorText = Text[color]{Type: "color", What: "colour",
	Names:   []string{"red", "green", "blue"},
	Aliases: map[string]color{"": 0, "verde": 1}}

// Every name and alias parses to its value, String and Marshal spell each value by
// its name, and an unknown spelling or an out-of-range value is refused by name.
func TestText(t *testing.T) {
	for s, want := range map[string]color{"red": 0, "green": 1, "blue": 2, "": 0, "verde": 1} {
		got, err := colorText.Parse(s)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v, want %d", s, got, err, want)
		}
	}
	for v, want := range []string{"red", "green", "blue"} {
		if got := colorText.String(color(v)); got != want {
			t.Errorf("String(%d) = %q, want %q", v, got, want)
		}
		b, err := colorText.Marshal(color(v))
		if err != nil || string(b) != want {
			t.Errorf("Marshal(%d) = %q, %v, want %q", v, b, err, want)
		}
		var back color = 7
		if err := colorText.Unmarshal(b, &back); err != nil || back != color(v) {
			t.Errorf("Unmarshal(%q) = %d, %v, want %d", b, back, err, v)
		}
	}
	if _, err := colorText.Parse("mauve"); err == nil || err.Error() != `unknown colour "mauve" (want red, green or blue)` {
		t.Errorf("Parse(mauve): %v", err)
	}
	for _, v := range []color{-1, 3} {
		if got := colorText.String(v); !strings.HasPrefix(got, "color(") {
			t.Errorf("String(%d) = %q, want color(%d)", v, got, v)
		}
		if _, err := colorText.Marshal(v); err == nil {
			t.Errorf("Marshal(%d): no error", v)
		}
	}
	var keep color = 2
	if err := colorText.Unmarshal([]byte("mauve"), &keep); err == nil || keep != 2 {
		t.Errorf("Unmarshal(mauve): %v, value %d (want an error, value kept)", err, keep)
	}
}
