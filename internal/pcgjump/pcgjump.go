// Package pcgjump moves a math/rand/v2 PCG ahead by any number of outputs in
// O(log n) steps, and draws IntN as math/rand/v2 does on a 64-bit machine, from an
// explicit state: what a device that draws a stream's values in parallel (cuda's
// k_draw_coords) needs to reproduce the host's stream, and what the host needs to
// skip the values the device consumed.
//
// The PCG (math/rand/v2, pcg.go) is a 128-bit linear congruential generator,
// state ← state·Mul + Inc (mod 2¹²⁸), whose output (Uint64) is the DXSM mix of the
// new state. n steps compose to state ← state·Mulⁿ + Inc·(Mulⁿ⁻¹ + … + 1), which
// Brown's method ("Random number generation with arbitrary strides", 1994) builds
// from the binary digits of n by repeated squaring.
package pcgjump

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"math/rand/v2"
)

// The PCG's multiplier and increment (math/rand/v2's pcg.go), as 128-bit values.
var (
	mul = U128{Hi: 2549297995355413924, Lo: 4865540595714422341}
	inc = U128{Hi: 6364136223846793005, Lo: 1442695040888963407}
)

// U128 is an unsigned 128-bit integer (arithmetic mod 2¹²⁸).
type U128 struct{ Hi, Lo uint64 }

// Mul returns a·b mod 2¹²⁸.
func (a U128) Mul(b U128) U128 {
	hi, lo := bits.Mul64(a.Lo, b.Lo)
	hi += a.Hi*b.Lo + a.Lo*b.Hi
	return U128{hi, lo}
}

// Add returns a+b mod 2¹²⁸.
func (a U128) Add(b U128) U128 {
	lo, c := bits.Add64(a.Lo, b.Lo, 0)
	hi, _ := bits.Add64(a.Hi, b.Hi, c)
	return U128{hi, lo}
}

// State returns the PCG's state (its MarshalBinary form: "pcg:", then hi and lo
// big-endian).
func State(p *rand.PCG) (U128, error) {
	b, err := p.MarshalBinary()
	if err != nil {
		return U128{}, fmt.Errorf("pcg state: %w", err)
	}
	return ParseBinary(b)
}

// ParseBinary returns the state of a PCG's MarshalBinary form.
func ParseBinary(b []byte) (U128, error) {
	if len(b) != 20 || string(b[:4]) != "pcg:" {
		return U128{}, fmt.Errorf("pcg state: %d bytes, not a math/rand/v2 PCG encoding", len(b))
	}
	return U128{binary.BigEndian.Uint64(b[4:]), binary.BigEndian.Uint64(b[12:])}, nil
}

// SetState sets the PCG's state to s (through UnmarshalBinary).
func SetState(p *rand.PCG, s U128) error {
	b := make([]byte, 0, 20)
	b = append(b, "pcg:"...)
	b = binary.BigEndian.AppendUint64(b, s.Hi)
	b = binary.BigEndian.AppendUint64(b, s.Lo)
	if err := p.UnmarshalBinary(b); err != nil {
		return fmt.Errorf("pcg state: %w", err)
	}
	return nil
}

// Jump returns the state n steps after s: the state after n calls of Uint64.
func Jump(s U128, n uint64) U128 {
	accMul, accAdd := U128{0, 1}, U128{}
	curMul, curAdd := mul, inc
	for ; n > 0; n >>= 1 {
		if n&1 != 0 {
			accMul = accMul.Mul(curMul)
			accAdd = accAdd.Mul(curMul).Add(curAdd)
		}
		curAdd = curMul.Add(U128{0, 1}).Mul(curAdd)
		curMul = curMul.Mul(curMul)
	}
	return s.Mul(accMul).Add(accAdd)
}

// Advance moves p n outputs ahead, as n calls of p.Uint64 would, in O(log n).
func Advance(p *rand.PCG, n uint64) error {
	s, err := State(p)
	if err != nil {
		return err
	}
	return SetState(p, Jump(s, n))
}

// Output is the PCG's output (Uint64) for the new state s (DXSM).
func Output(s U128) uint64 {
	const cheapMul = 0xda942042e4dd58b5
	hi := s.Hi
	hi ^= hi >> 32
	hi *= cheapMul
	hi ^= hi >> 48
	return hi * (s.Lo | 1)
}

// Stream is a PCG's state with the draws of math/rand/v2 on it, for a reference or
// a device's fix-up that must reproduce them step by step.
type Stream struct {
	S    U128   // the state
	Used uint64 // Uint64 outputs consumed
}

// Uint64 steps the state and returns its output (PCG.Uint64).
func (r *Stream) Uint64() uint64 {
	r.S = r.S.Mul(mul).Add(inc)
	r.Used++
	return Output(r.S)
}

// Uint64N is math/rand/v2's Rand.uint64n on a 64-bit machine (what IntN(n) returns
// for n > 0): a mask for a power of two, else Lemire's multiply with its rejection
// of lo < (2⁶⁴ − n) mod n.
func (r *Stream) Uint64N(n uint64) uint64 {
	if n&(n-1) == 0 {
		return r.Uint64() & (n - 1)
	}
	hi, lo := bits.Mul64(r.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(r.Uint64(), n)
		}
	}
	return hi
}
