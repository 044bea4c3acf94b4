package accounting

import (
	"encoding/json"
	"testing"
)

// TestEnumText pins the spellings, aliases and errors of Adjacency, Sampling and
// PLDMechanism in flags and JSON, including values out of range.
func TestEnumText(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{AddRemove.String(), "add-remove"},
		{ReplaceOne.String(), "replace-one"},
		{Adjacency(7).String(), "Adjacency(7)"},
		{SamplingPoisson.String(), "poisson"},
		{SamplingUniform.String(), "uniform"},
		{SamplingShuffle.String(), "shuffle"},
		{Sampling(-1).String(), "Sampling(-1)"},
		{PLDGaussian.String(), "gaussian"},
		{PLDPoissonGaussian.String(), "poisson-gaussian"},
		{PLDUniformGaussian.String(), "uniform-gaussian"},
		{PLDMechanism(3).String(), "PLDMechanism(3)"},
	} {
		if tc.got != tc.want {
			t.Errorf("String: %q, want %q", tc.got, tc.want)
		}
	}
	for in, want := range map[string]Adjacency{"add-remove": AddRemove, "addremove": AddRemove, "add/remove": AddRemove,
		"replace-one": ReplaceOne, "replace": ReplaceOne, "substitution": ReplaceOne} {
		if got, err := ParseAdjacency(in); err != nil || got != want {
			t.Errorf("ParseAdjacency(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, want := range map[string]Sampling{"poisson": SamplingPoisson, "uniform": SamplingUniform, "shuffle": SamplingShuffle} {
		if got, err := ParseSampling(in); err != nil || got != want {
			t.Errorf("ParseSampling(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	errOf := func(err error) string {
		if err == nil {
			return "<nil>"
		}
		return err.Error()
	}
	var m PLDMechanism
	_, e1 := ParseAdjacency("neighbour")
	_, e2 := ParseSampling("poison")
	_, e3 := Adjacency(2).MarshalText()
	_, e4 := Sampling(3).MarshalText()
	_, e5 := PLDMechanism(-1).MarshalText()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{e1, `unknown adjacency "neighbour" (want add-remove or replace-one)`},
		{e2, `unknown sampling "poison" (want poisson, uniform or shuffle)`},
		{m.UnmarshalText([]byte("laplace")), `unknown PLD mechanism "laplace" (want gaussian, poisson-gaussian or uniform-gaussian)`},
		{e3, "invalid adjacency 2"},
		{e4, "invalid sampling 3"},
		{e5, "invalid PLD mechanism -1"},
	} {
		if got := errOf(tc.err); got != tc.want {
			t.Errorf("error %q, want %q", got, tc.want)
		}
	}
	// JSON round trip through MarshalText / UnmarshalText.
	type rec struct {
		A Adjacency    `json:"a"`
		S Sampling     `json:"s"`
		M PLDMechanism `json:"m"`
	}
	b, err := json.Marshal(rec{ReplaceOne, SamplingShuffle, PLDUniformGaussian})
	if err != nil || string(b) != `{"a":"replace-one","s":"shuffle","m":"uniform-gaussian"}` {
		t.Fatalf("JSON %s, %v", b, err)
	}
	var r rec
	if err := json.Unmarshal([]byte(`{"a":"substitution","s":"uniform","m":"poisson-gaussian"}`), &r); err != nil ||
		r != (rec{ReplaceOne, SamplingUniform, PLDPoissonGaussian}) {
		t.Fatalf("read back %+v, %v", r, err)
	}
}
