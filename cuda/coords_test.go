package cuda

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/dpfil/dpfil/internal/pcgjump"
)

// drawOnDevice runs k_draw_coords and k_draw_coords_fix for rows draws of IntN(n)
// from state s on be (plain device memory) and returns the coordinates as long long
// and as int (n < 2³¹ only), the one-hot values (table given) and the outputs used.
func drawOnDevice(t *testing.T, be *Backend, s pcgjump.U128, n int64, rows int, table []float32) (c64 []int64, c32 []int32, vals []float32, used float64) {
	t.Helper()
	b := be
	b.mu.Lock()
	st, flags, out64, used0 := b.allocBytes(16), b.allocBytes(4*drawSegments), b.allocBytes(8*rows), b.allocBytes(8)
	var out32, val, tab unsafe.Pointer
	if n < 1<<31 {
		out32 = b.allocBytes(4 * rows)
	}
	if table != nil {
		val, tab = b.allocBytes(4*rows), b.allocBytes(4*len(table))
	}
	b.mu.Unlock()
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	if !b.begin() {
		t.Fatal(b.Err())
	}
	state := [2]int64{int64(s.Hi), int64(s.Lo)}
	b.copyIn(st, unsafe.Pointer(&state[0]), 16)
	if table != nil {
		b.copyIn(tab, unsafe.Pointer(&table[0]), 4*len(table))
	}
	b.launch("k_draw_coords", drawSegments, rows, drawSegments, n, st, tab, out32, out64, val, flags)
	b.launch("k_draw_coords_fix", 1, rows, drawSegments, n, st, tab, out32, out64, val, flags, used0)
	c64 = make([]int64, rows)
	b.copyOut(unsafe.Pointer(&c64[0]), out64, 8*rows)
	if out32 != nil {
		c32 = make([]int32, rows)
		b.copyOut(unsafe.Pointer(&c32[0]), out32, 4*rows)
	}
	if val != nil {
		vals = make([]float32, rows)
		b.copyOut(unsafe.Pointer(&vals[0]), val, 4*rows)
	}
	b.copyOut(unsafe.Pointer(&used), used0, 8)
	b.end()
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	return c64, c32, vals, used
}

// TestDrawCoordsMatchesIntN: the device's draws are math/rand/v2's IntN sequence on
// the same PCG, for several seeds, start offsets (the stream part-way through a
// run), input sizes (784, 3072, a power of two, 1) and draw counts (fewer and more
// than the kernel's segments), and the consumed count is the PCG's advance; n =
// 3·2⁶¹ rejects one draw in eight, so k_draw_coords_fix's redraw must give IntN's
// values (the parallel draw alone would not). On the emulator, and on the GPU or
// the stand-in in the GPU build.
func TestDrawCoordsMatchesIntN(t *testing.T) {
	for _, drv := range testDrivers(t) {
		t.Run(drv.Name(), func(t *testing.T) {
			be, err := NewDeviceBackend(drv)
			if err != nil {
				t.Fatal(err)
			}
			defer be.Close()
			cases := []struct {
				seed   uint64
				offset uint64
				n      int64
				rows   int
			}{
				{1, 0, 784, 1},
				{2, 5, 784, 600},
				{3, 1_000_003, 3072, 2000},
				{4, 1 << 40, 1024, 513},
				{5, 77, 1, 9},
				{6, 0, 3 << 61, 600},
				{7, 12345, 3 << 61, 1500},
				{8, 3, 10, 64},
			}
			for _, c := range cases {
				p := rand.NewPCG(c.seed, c.seed*0x9e3779b97f4a7c15)
				if err := pcgjump.Advance(p, c.offset); err != nil {
					t.Fatal(err)
				}
				s, err := pcgjump.State(p)
				if err != nil {
					t.Fatal(err)
				}
				var table []float32
				if c.n < 1<<16 {
					table = make([]float32, c.n)
					for i := range table {
						table[i] = float32(i)*0.5 + 0.25
					}
				}
				c64, c32, vals, used := drawOnDevice(t, be, s, c.n, c.rows, table)
				r := rand.New(p)
				for i := range c.rows {
					want := int64(r.Uint64N(uint64(c.n)))
					if c64[i] != want || (c32 != nil && int64(c32[i]) != want) {
						t.Fatalf("%+v: draw %d = %d (int %v), IntN gives %d", c, i, c64[i], c32 != nil && int64(c32[i]) == want, want)
					}
					if table != nil && vals[i] != table[want] {
						t.Fatalf("%+v: value %d = %v, want table[%d] = %v", c, i, vals[i], want, table[want])
					}
				}
				now, err := pcgjump.State(p)
				if err != nil {
					t.Fatal(err)
				}
				if pcgjump.Jump(s, uint64(used)) != now {
					t.Fatalf("%+v: the device says %v outputs were used; the PCG is not there", c, used)
				}
				if c.n == 3<<61 && int(used) <= c.rows {
					t.Fatalf("%+v: %v outputs for %d draws: no rejection, the fix-up path was not exercised", c, used, c.rows)
				}
				if c.n != 3<<61 && int(used) != c.rows {
					t.Fatalf("%+v: %v outputs used for %d draws", c, used, c.rows)
				}
			}
		})
	}
}
