package pcgjump

import (
	"math/rand/v2"
	"testing"
)

// TestAdvanceMatchesStepping: Advance(n) leaves a PCG where n calls of Uint64 leave
// it (its next outputs agree), for n = 0, 1, 2, 1000 and 2²⁰ stepped, and 2⁴⁰ as
// 2²⁰ jumps of 2²⁰ (the jump of 2²⁰ itself checked against stepping).
func TestAdvanceMatchesStepping(t *testing.T) {
	for _, seed := range [][2]uint64{{1, 2}, {0x9e3779b97f4a7c15, 7}, {^uint64(0), 0}} {
		for _, n := range []uint64{0, 1, 2, 3, 1000, 1 << 20} {
			stepped := rand.NewPCG(seed[0], seed[1])
			for range n {
				stepped.Uint64()
			}
			jumped := rand.NewPCG(seed[0], seed[1])
			if err := Advance(jumped, n); err != nil {
				t.Fatal(err)
			}
			for i := range 4 {
				if a, b := jumped.Uint64(), stepped.Uint64(); a != b {
					t.Fatalf("seed %v, n %d: output %d after Advance %#x, after stepping %#x", seed, n, i, a, b)
				}
			}
		}
		s, err := State(rand.NewPCG(seed[0], seed[1]))
		if err != nil {
			t.Fatal(err)
		}
		composed := s
		for range 1 << 20 {
			composed = Jump(composed, 1<<20)
		}
		if direct := Jump(s, 1<<40); direct != composed {
			t.Fatalf("seed %v: Jump(2^40) = %+v, 2^20 jumps of 2^20 = %+v", seed, direct, composed)
		}
		// Jumps compose additively: a + b = (a then b).
		if a, b := Jump(Jump(s, 12345), 1<<40-12345), Jump(s, 1<<40); a != b {
			t.Fatalf("seed %v: Jump(12345) then Jump(2^40−12345) = %+v, Jump(2^40) = %+v", seed, a, b)
		}
	}
}

// TestStreamMatchesRand: Stream's Uint64N and Output reproduce rand.New(PCG).IntN
// and Uint64, including n = 3·2⁶¹ where one draw in eight is rejected and redrawn,
// and powers of two (a mask); Used counts the Uint64 values consumed.
func TestStreamMatchesRand(t *testing.T) {
	for _, n := range []uint64{784, 3072, 1024, 1, 3 << 61, 1<<63 + 1} {
		p := rand.NewPCG(42, uint64(n))
		s0, err := State(p)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(p)
		st := Stream{S: s0}
		for i := range 2000 {
			var want uint64
			if n <= 1<<62 {
				want = uint64(r.IntN(int(n)))
			} else {
				want = r.Uint64N(n)
			}
			if got := st.Uint64N(n); got != want {
				t.Fatalf("n %d, draw %d: %d, want %d", n, i, got, want)
			}
		}
		// Used is exact: the PCG advanced by Used from s0 is where r is now.
		now, err := State(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := Jump(s0, st.Used); got != now {
			t.Fatalf("n %d: Jump(Used = %d) = %+v, the PCG is at %+v", n, st.Used, got, now)
		}
		if n == 3<<61 && st.Used <= 2000 {
			t.Fatalf("n = 3·2^61: %d values for 2000 draws, want rejections", st.Used)
		}
	}
}

// TestSetStateRoundTrip: State and SetState invert each other through the PCG's
// binary form, and a malformed encoding is an error.
func TestSetStateRoundTrip(t *testing.T) {
	p := rand.NewPCG(3, 4)
	want := U128{0x0123456789abcdef, 0xfedcba9876543210}
	if err := SetState(p, want); err != nil {
		t.Fatal(err)
	}
	if got, err := State(p); err != nil || got != want {
		t.Fatalf("State = %+v, %v; want %+v", got, err, want)
	}
	if _, err := ParseBinary([]byte("pcg:short")); err == nil {
		t.Fatal("a short encoding parsed")
	}
}
