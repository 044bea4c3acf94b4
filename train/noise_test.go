package train

import (
	"math"
	"runtime"
	"testing"

	"github.com/dpfil/dpfil/internal/philox"
)

// The noise is a pure function of (seed, repeat, step, coordinate): the same bits
// for any number of goroutines, and each coordinate is float32(sum + σC·z) with z
// philox.Normal of that coordinate.
func TestAddNoiseAnyWorkers(t *testing.T) {
	n := 3*noiseParallelMin + 7
	base := make([]float32, n)
	for i := range base {
		base[i] = float32(i%13) - 6
	}
	key := noiseKey(42, 3)
	run := func(procs int) []float32 {
		old := runtime.GOMAXPROCS(procs)
		defer runtime.GOMAXPROCS(old)
		s := append([]float32(nil), base...)
		addNoise(s, 0.75, key, 17)
		return s
	}
	one, many := run(1), run(5)
	for i := range one {
		if math.Float32bits(one[i]) != math.Float32bits(many[i]) {
			t.Fatalf("coordinate %d: %v with 1 goroutine, %v with 5", i, one[i], many[i])
		}
		want := float32(float64(base[i]) + float64(0.75*philox.Normal(key, 17, uint64(i))))
		if one[i] != want {
			t.Fatalf("coordinate %d: %v, want %v", i, one[i], want)
		}
	}
	if other := noiseKey(42, 4); other == key {
		t.Fatal("repeats share a noise key")
	}
}
