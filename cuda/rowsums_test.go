package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestRowSumStripes pins the stripe count of each sum length: it fixes the order in
// which RowSumsBlocked adds (docs/perf.md).
func TestRowSumStripes(t *testing.T) {
	for _, c := range []struct{ hw, S int }{
		{1, 1}, {25, 1}, {63, 1}, {64, 8}, {65, 16}, {196, 16}, {256, 16}, {257, 32}, {1024, 32}, {1 << 20, 32},
	} {
		if got := rowSumStripes(c.hw); got != c.S {
			t.Errorf("rowSumStripes(%d) = %d, want %d", c.hw, got, c.S)
		}
	}
}

// rowSumsRef is RowSumsBlocked's documented sum of x[0:hw] in float32: for S > 1 the
// stripes k ≡ s (mod S), each in order of k, then the stripe sums in order of s; for
// S = 1 the values in order.
func rowSumsRef(x []float32, S int) float32 {
	var acc float32
	for s := 0; s < S; s++ {
		var p float32
		for k := s; k < len(x); k += S {
			p += x[k]
		}
		acc += p
	}
	return acc
}

// TestRowSumsShapes checks RowSums and RowSumsBlocked (k_row_sums alone for short
// sums, k_row_sums_part + k_row_sums for long ones) on geometries around every stripe
// count — hw below, at and above 64, 256 and cifar-cnn's 1024 values, one to more
// than a block of (row, channel) pairs, row strides and destination strides with gaps,
// rows in groups of kd at an outer stride, managed and plain memory, a smaller call
// after a larger one (the stripe buffer reused) and a larger after it (grown) — bit for
// bit against a float32 reference that sums in the documented order (so the result
// cannot depend on the launch), and against a float64 reference within the float32
// bound (⌈hw/S⌉ + S)·2⁻²⁴·Σ|x| of that order; destination gaps must stay untouched.
// On the emulator and (GPU build) the stand-in or a GPU.
func TestRowSumsShapes(t *testing.T) {
	type shape struct{ rows, kd, C, hw, srcGap, dstStride, outer int }
	shapes := []shape{
		{3, 3, 5, 1, 0, 5, 0},         // a dense bias: one value per sum
		{4, 4, 3, 25, 2, 4, 0},        // mnist-cnn conv2's 5×5, one pass
		{2, 2, 7, 63, 1, 9, 0},        // the longest one-pass sum
		{5, 5, 3, 64, 3, 3, 0},        // S = 8, a whole number of stripes
		{3, 3, 4, 65, 0, 6, 0},        // S = 16, one stripe longer
		{6, 3, 16, 196, 5, 16, 70},    // mnist-cnn conv1, blocked: 2 groups of 3 rows
		{2, 2, 64, 256, 0, 64, 0},     // cifar-cnn's 16×16 layers
		{3, 1, 9, 257, 4, 11, 13},     // S = 32, kd = 1: every row its own group
		{4, 2, 32, 1024, 7, 40, 100},  // cifar-cnn's 32×32 layers, blocked
		{1, 1, 300, 100, 0, 300, 0},   // 300 pairs · 16 stripes: several blocks
		{2, 2, 3, 1000, 1, 3, 0},      // a smaller call after the larger ones
		{9, 9, 40, 400, 2, 41, 0},     // and a larger again (the buffer grows)
		{5, 5, 2, 4097, 0, 2, 0},      // 129 values a stripe
		{2, 2, 130, 72, 3, 131, 0},    // S = 16 with 4–5 values a stripe
		{7, 7, 1, 640, 11, 1, 0},      // one channel
		{12, 4, 6, 90, 0, 6, 4*6 + 2}, // 3 groups of 4 rows, a gap between groups
	}
	for _, drv := range testDrivers(t) {
		for _, plain := range []bool{false, true} {
			be, _ := openUploader(t, drv, plain)
			rng := rand.New(rand.NewPCG(31, 32))
			for si, sh := range shapes {
				srcStride := sh.C*sh.hw + sh.srcGap
				src := randF32(rng, sh.rows*srcStride)
				// Magnitudes spread over 2⁶ so that the order shows in the bits.
				for i := range src {
					src[i] *= float32(int(1) << rng.IntN(7))
				}
				groups := (sh.rows + sh.kd - 1) / sh.kd
				dstN := (groups-1)*sh.outer + (sh.kd-1)*sh.dstStride + sh.C
				if sh.kd == sh.rows {
					dstN = (sh.rows-1)*sh.dstStride + sh.C
				}
				const sentinel = float32(-12345.5)
				old := make([]float32, dstN)
				for i := range old {
					old[i] = sentinel
				}
				S := rowSumStripes(sh.hw)
				want, written := append([]float32(nil), old...), make([]bool, dstN)
				bound := make([]float64, dstN)
				exact := make([]float64, dstN)
				for r := 0; r < sh.rows; r++ {
					for c := 0; c < sh.C; c++ {
						x := src[r*srcStride+c*sh.hw : r*srcStride+(c+1)*sh.hw]
						e := (r/sh.kd)*sh.outer + (r%sh.kd)*sh.dstStride + c
						if written[e] {
							t.Fatalf("shape %d writes dst[%d] twice", si, e)
						}
						written[e] = true
						want[e] = rowSumsRef(x, S)
						var s, a float64
						for _, v := range x {
							s += float64(v)
							a += math.Abs(float64(v))
						}
						exact[e] = s
						bound[e] = float64((sh.hw+S-1)/S+S) * 0x1p-24 * a
					}
				}
				dsrc, ddst := upF32(be, src), upF32(be, old)
				if sh.kd == sh.rows && sh.outer == 0 {
					be.RowSums(sh.rows, sh.C, sh.hw, dsrc, srcStride, ddst, sh.dstStride)
				} else {
					be.RowSumsBlocked(sh.rows, sh.kd, sh.C, sh.hw, dsrc, srcStride, ddst, sh.dstStride, sh.outer)
				}
				got := make([]float32, dstN)
				be.Copy(got, ddst)
				if err := be.Err(); err != nil {
					t.Fatalf("%s plain=%v shape %d: %v", drv.Name(), plain, si, err)
				}
				name := fmt.Sprintf("%s plain=%v shape %d %+v (S = %d)", drv.Name(), plain, si, sh, S)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Errorf("%s: dst[%d] = %v, want %v (bit for bit; written %v)", name, i, got[i], want[i], written[i])
						break
					}
					if written[i] && math.Abs(float64(got[i])-exact[i]) > bound[i] {
						t.Errorf("%s: dst[%d] = %v, exact %v, beyond %.3g", name, i, got[i], exact[i], bound[i])
						break
					}
				}
			}
			if err := be.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestRowSumsLaunchIndependent runs k_row_sums_part and k_row_sums directly on a
// few launch shapes (one thread, one warp, a block, as many threads as pairs) and
// requires the same bits each time: each thread's work is fixed by its index alone.
func TestRowSumsLaunchIndependent(t *testing.T) {
	rows, C, hw := 3, 7, 300
	S := rowSumStripes(hw)
	for _, drv := range testDrivers(t) {
		be, _ := openUploader(t, drv, false)
		rng := rand.New(rand.NewPCG(41, 42))
		src := upF32(be, randF32(rng, rows*C*hw))
		part, dst := be.Alloc(rows*C*S), be.Alloc(rows*C)
		pp, pd, ps := unsafe.Pointer(unsafe.SliceData(part)), unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Pointer(unsafe.SliceData(src))
		var first []float32
		for _, geo := range [][2]uint32{{1, 1}, {1, 32}, {1, 256}, {uint32((rows*C*S + 255) / 256), 256}, {3, 64}} {
			if err := drv.Launch("k_row_sums_part", Dim3{geo[0], 1, 1}, Dim3{geo[1], 1, 1}, Args(rows, C, hw, S, ps, C*hw, pp)); err != nil {
				t.Fatal(err)
			}
			if err := drv.Launch("k_row_sums", Dim3{geo[0], 1, 1}, Dim3{geo[1], 1, 1}, Args(rows, rows, C, S, pp, C*S, pd, C, int64(0))); err != nil {
				t.Fatal(err)
			}
			if err := drv.Sync(); err != nil {
				t.Fatal(err)
			}
			got := append([]float32(nil), dst...)
			if first == nil {
				first = got
				for q := range got {
					if want := rowSumsRef(src[q*hw:(q+1)*hw], S); math.Float32bits(got[q]) != math.Float32bits(want) {
						t.Fatalf("%s grid %v: dst[%d] = %v, want %v", drv.Name(), geo, q, got[q], want)
					}
				}
				continue
			}
			for q := range got {
				if math.Float32bits(got[q]) != math.Float32bits(first[q]) {
					t.Fatalf("%s grid %v: dst[%d] = %v, first launch %v", drv.Name(), geo, q, got[q], first[q])
				}
			}
		}
		if err := be.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTranspose3BitExact checks k_transpose3 (dst[j][i][k] = src[i][j][k], a copy)
// bit for bit on shapes with hw = 1, a or b = 1, odd sizes and cifar-cnn's 32 channels
// of 32×32 maps, with dst longer than a·b·hw (the tail must stay untouched), on the
// emulator and (GPU build) the stand-in or a GPU.
func TestTranspose3BitExact(t *testing.T) {
	shapes := [][3]int{{1, 1, 1}, {3, 5, 7}, {5, 3, 1}, {1, 9, 4}, {7, 1, 13}, {32, 6, 1024}, {128, 3, 64}, {13, 17, 19}}
	for _, drv := range testDrivers(t) {
		be, _ := openUploader(t, drv, true)
		rng := rand.New(rand.NewPCG(51, 52))
		for _, sh := range shapes {
			a, b, hw := sh[0], sh[1], sh[2]
			n := a * b * hw
			src := randF32(rng, n)
			old := randF32(rng, n+5)
			want := append([]float32(nil), old...)
			for i := 0; i < a; i++ {
				for j := 0; j < b; j++ {
					copy(want[(j*a+i)*hw:(j*a+i+1)*hw], src[(i*b+j)*hw:(i*b+j+1)*hw])
				}
			}
			dst := upF32(be, old)
			be.Transpose3(a, b, hw, upF32(be, src), dst)
			got := make([]float32, len(old))
			be.Copy(got, dst)
			if err := be.Err(); err != nil {
				t.Fatalf("%s %v: %v", drv.Name(), sh, err)
			}
			for e := range want {
				if math.Float32bits(got[e]) != math.Float32bits(want[e]) {
					t.Errorf("%s transpose3 %v: dst[%d] = %v, want %v", drv.Name(), sh, e, got[e], want[e])
					break
				}
			}
		}
		if err := be.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
