package strictyaml

import (
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	type doc struct {
		Name  string `yaml:"name"`
		Sizes []int  `yaml:"sizes"`
	}
	for _, c := range []struct {
		name, in string
		want     doc
		err      string // "" = no error; else a substring of it
	}{
		{"yaml", "name: a\nsizes: [1, 2]\n", doc{"a", []int{1, 2}}, ""},
		{"json", `{"name": "b", "sizes": [3]}`, doc{"b", []int{3}}, ""},
		{"first document only", "name: c\n---\nname: d\n", doc{Name: "c"}, ""},
		{"unknown key", "name: a\nsize: 3\n", doc{}, "field size not found"},
		{"empty", "", doc{}, "empty file"},
		{"comments only", "# nothing\n", doc{}, "empty file"},
		{"bad yaml", "name: [\n", doc{}, "yaml:"},
	} {
		var got doc
		err := Decode(strings.NewReader(c.in), &got)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want one with %q", c.name, err, c.err)
		case c.err == "" && (got.Name != c.want.Name || len(got.Sizes) != len(c.want.Sizes)):
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}
