// Package jsonfloat is dpfil's one convention for numbers that are not finite in
// JSON output.
//
// JSON has no NaN and no infinity, and encoding/json refuses to write them. Every
// dpfil package writes a float64 that is NaN, +Inf or -Inf as null, and reads null
// back as the non-finite value the field stands for:
//
//   - Inf: +Inf, for quantities that are infinite when nothing leaks or nothing is
//     noised — ε, the order-2 RDP ε₂, the MSE lower bounds (1/dFIL at dFIL = 0);
//   - Float: NaN, for every other number (a statistic of no data, an accuracy that
//     was not measured).
//
// A field that is absent reads as 0, as with encoding/json. Finite numbers are
// written exactly as encoding/json writes a float64, so switching a field to these
// types changes no output. The convention loses the sign of an infinity and the
// difference between NaN and infinity; the field's type (its documentation) restores
// what it means.
package jsonfloat

import (
	"bytes"
	"encoding/json"
	"math"
)

// Float is a float64 written as null when not finite; null reads back as NaN.
type Float float64

// MarshalJSON writes f as a JSON number, or null when f is not finite.
func (f Float) MarshalJSON() ([]byte, error) { return marshal(float64(f)) }

// UnmarshalJSON reads a JSON number, or null as NaN.
func (f *Float) UnmarshalJSON(b []byte) error { return unmarshal(b, (*float64)(f), math.NaN()) }

// Inf is a float64 written as null when not finite; null reads back as +Inf.
type Inf float64

// MarshalJSON writes x as a JSON number, or null when x is not finite.
func (x Inf) MarshalJSON() ([]byte, error) { return marshal(float64(x)) }

// UnmarshalJSON reads a JSON number, or null as +Inf.
func (x *Inf) UnmarshalJSON(b []byte) error { return unmarshal(b, (*float64)(x), math.Inf(1)) }

// Finite reports whether x is neither NaN nor infinite.
func Finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// Ptr is x, or nil when x is not finite: a *float64 field written by encoding/json
// follows the convention.
func Ptr(x float64) *float64 {
	if !Finite(x) {
		return nil
	}
	return &x
}

// Value is *p, or null when p is nil: the reverse of Ptr with the field's null
// value (math.Inf(1) for an Inf field, math.NaN() for a Float field).
func Value(p *float64, null float64) float64 {
	if p == nil {
		return null
	}
	return *p
}

const null = "null"

func marshal(x float64) ([]byte, error) {
	if !Finite(x) {
		return []byte(null), nil
	}
	return json.Marshal(x)
}

func unmarshal(b []byte, dst *float64, ifNull float64) error {
	if string(bytes.TrimSpace(b)) == null {
		*dst = ifNull
		return nil
	}
	return json.Unmarshal(b, dst)
}
