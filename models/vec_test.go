package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestTanhRational(t *testing.T) {
	for x := float32(-12); x < 12; x += 1e-3 {
		if got, want := float64(tanhRational(x)), math.Tanh(float64(x)); math.Abs(got-want) > 5e-7 {
			t.Fatalf("tanhRational(%v) = %v, want %v", x, got, want)
		}
	}
}

func TestVectorKernels(t *testing.T) {
	if !hasAVX2FMA() {
		t.Log("no AVX2/FMA: the vector kernels are not used on this CPU")
		return
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{0, 1, 7, 8, 9, 31, 100, 1027} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			x, y := make([]float32, n), make([]float32, n)
			for i := range x {
				x[i] = float32(rng.NormFloat64() * 3)
				y[i] = float32(rng.NormFloat64())
			}
			if n > 2 {
				x[0], x[1], x[2] = 40, -40, 1e-30 // saturation and tiny values
			}
			th := make([]float32, n)
			tanhVec(x, th)
			var wantDot, absDot float64
			for i := range x {
				if d := math.Abs(float64(th[i]) - math.Tanh(float64(x[i]))); d > 5e-7 {
					t.Fatalf("tanh(%v) = %v, error %v", x[i], th[i], d)
				}
				// the same value through the vector body must give the same bits
				var blk, out [8]float32
				blk[3] = x[i]
				tanhF32(blk[:], out[:])
				if out[3] != th[i] {
					t.Fatalf("tanh(%v): %v at position %d but %v in a block", x[i], th[i], i, out[3])
				}
				wantDot += float64(x[i]) * float64(y[i])
				absDot += math.Abs(float64(x[i]) * float64(y[i]))
			}
			if got := dotVec(x, y); math.Abs(got-wantDot) > 1e-13*absDot {
				t.Fatalf("dot = %v, want %v", got, wantDot)
			}
			var wantSq float64
			for _, v := range y {
				wantSq += float64(v) * float64(v)
			}
			if xy, yy := dotSqVec(x, y); math.Abs(xy-wantDot) > 1e-13*absDot || math.Abs(yy-wantSq) > 1e-13*wantSq {
				t.Fatalf("dotSq = %v, %v, want %v, %v", xy, yy, wantDot, wantSq)
			}
			acc, want := make([]float64, n), make([]float64, n)
			for i := range acc {
				acc[i] = rng.NormFloat64()
				want[i] = acc[i] + 0.37*float64(y[i])
			}
			axpyVec(acc, 0.37, y)
			for i := range acc {
				if math.Abs(acc[i]-want[i]) > 1e-15*(1+math.Abs(want[i])) {
					t.Fatalf("axpy[%d] = %v, want %v", i, acc[i], want[i])
				}
			}
		})
	}
}

// TestActTangentVectorBitIdentical checks that ActTangent and ActBackward on the
// vector kernels (mulVec, actTanVec, tanhBackF32) give the bits of the plain Go loops, for sizes with and
// without a tail, both activations.
func TestActTangentVectorBitIdentical(t *testing.T) {
	if !hasAVX2FMA() {
		t.Skip("no AVX2/FMA: the vector kernels are not used on this CPU")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	vec := &cpuBackend[float32]{workers: 1, sg: &packedSgemm{}}
	plain := &cpuBackend[float32]{workers: 1}
	for _, f := range []Act{ActTanh, ActELU} {
		for _, size := range []int{1, 8, 13, 64, 203} {
			const n, k = 3, 4
			vals := func(m int) []float32 {
				v := make([]float32, m)
				for i := range v {
					v[i] = float32(rng.NormFloat64())
				}
				return v
			}
			x, dy := vals(n*size), vals(n*size)
			y := make([]float32, n*size)
			plain.ActForward(f, x, y)
			tx, tdy := vals(n*k*size), vals(n*k*size)
			var out [2][3][]float32
			for i, be := range []*cpuBackend[float32]{plain, vec} {
				ty, tdx, dx := make([]float32, n*k*size), make([]float32, n*k*size), make([]float32, n*size)
				be.ActTangent(f, n, k, size, x, y, dy, tx, ty, tdy, tdx)
				be.ActBackward(f, x, y, dy, dx)
				out[i] = [3][]float32{ty, tdx, dx}
			}
			for j, name := range []string{"ty", "tdx", "ActBackward dx"} {
				for i := range out[0][j] {
					if math.Float32bits(out[0][j][i]) != math.Float32bits(out[1][j][i]) {
						t.Fatalf("act %d size %d: %s[%d] = %v with the vector kernels, %v in Go", f, size, name, i, out[1][j][i], out[0][j][i])
					}
				}
			}
		}
	}
}

// TestRowSumsAndBiasBitIdentical checks rowSums (four rows' chains at a time) and
// the float32 fast path's bias add (addConstF32) against one plain Go loop per row,
// bit for bit, with row counts and lengths that leave tails.
func TestRowSumsAndBiasBitIdentical(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, sh := range [][2]int{{1, 1}, {3, 7}, {4, 8}, {7, 25}, {9, 1024}, {32, 64}} {
		C, hw := sh[0], sh[1]
		D := make([]float32, C*hw)
		for i := range D {
			D[i] = float32(rng.NormFloat64())
		}
		got := make([]float32, C)
		rowSums(D, hw, got)
		for c := range C {
			var s float32
			for _, v := range D[c*hw : (c+1)*hw] {
				s += v
			}
			if math.Float32bits(s) != math.Float32bits(got[c]) {
				t.Fatalf("%dx%d: row %d sums to %v, one chain %v", C, hw, c, got[c], s)
			}
		}
		if !hasAVX2FMA() {
			continue
		}
		b := make([]float32, C)
		for i := range b {
			b[i] = float32(rng.NormFloat64())
		}
		want, vec := slices.Clone(D), slices.Clone(D)
		addBiasRows(want, b, hw)
		for c := range C {
			addConstF32(vec[c*hw:(c+1)*hw], b[c])
		}
		if !slices.Equal(want, vec) {
			t.Fatalf("%dx%d: addConstF32 differs from the Go loop", C, hw)
		}
	}
}
