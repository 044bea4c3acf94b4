package jsonfloat

import (
	"encoding/json"
	"math"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, c := range []struct {
		x                  float64
		json               string
		backFloat, backInf float64 // what Float and Inf read back
	}{
		{1.5, "1.5", 1.5, 1.5},
		{0, "0", 0, 0},
		{-2e-7, "-2e-7", -2e-7, -2e-7},
		{1e21, "1e+21", 1e21, 1e21},
		{inf, "null", nan, inf},
		{-inf, "null", nan, inf},
		{nan, "null", nan, inf},
	} {
		for _, k := range []struct {
			name string
			v    any
			back float64
			dst  func() (any, func() float64)
		}{
			{"Float", Float(c.x), c.backFloat, func() (any, func() float64) { var f Float; return &f, func() float64 { return float64(f) } }},
			{"Inf", Inf(c.x), c.backInf, func() (any, func() float64) { var f Inf; return &f, func() float64 { return float64(f) } }},
		} {
			b, err := json.Marshal(k.v)
			if err != nil {
				t.Fatalf("%s(%v): %v", k.name, c.x, err)
			}
			if string(b) != c.json {
				t.Errorf("%s(%v) = %s, want %s", k.name, c.x, b, c.json)
			}
			if plain, err := json.Marshal(c.x); err == nil && string(plain) != string(b) {
				t.Errorf("%s(%v) = %s, encoding/json writes %s", k.name, c.x, b, plain)
			}
			dst, get := k.dst()
			if err := json.Unmarshal(b, dst); err != nil {
				t.Fatalf("%s: read %s: %v", k.name, b, err)
			}
			if got := get(); got != k.back && !(math.IsNaN(got) && math.IsNaN(k.back)) {
				t.Errorf("%s: %s read back as %v, want %v", k.name, b, got, k.back)
			}
		}
	}
}

// In a struct, absent fields stay 0 and malformed numbers are errors.
func TestStructFields(t *testing.T) {
	var s struct {
		A Inf   `json:"a"`
		B Float `json:"b"`
		C Inf   `json:"c"`
	}
	if err := json.Unmarshal([]byte(`{"a": null, "b": null}`), &s); err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(float64(s.A), 1) || !math.IsNaN(float64(s.B)) || s.C != 0 {
		t.Fatalf("read %+v", s)
	}
	if err := json.Unmarshal([]byte(`{"a": "+Inf"}`), &s); err == nil {
		t.Fatal("a string read as a number")
	}
}

func TestPtrValue(t *testing.T) {
	if Ptr(math.Inf(1)) != nil || Ptr(math.NaN()) != nil || *Ptr(2) != 2 {
		t.Fatal("Ptr")
	}
	if !math.IsInf(Value(nil, math.Inf(1)), 1) || Value(Ptr(3), math.NaN()) != 3 {
		t.Fatal("Value")
	}
}
