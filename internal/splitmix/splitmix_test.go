package splitmix

import "testing"

// The reference splitmix64.c (Vigna) seeded with 1234567 gives these first outputs.
func TestNextMatchesReference(t *testing.T) {
	s := uint64(1234567)
	want := []uint64{6457827717110365317, 3203168211198807973, 9817491932198370423, 4593380528125082431, 16408922859458223821}
	for i, w := range want {
		if got := Next(&s); got != w {
			t.Fatalf("output %d = %d, want %d", i, got, w)
		}
	}
}

func TestMixIsBijectiveOnSample(t *testing.T) {
	seen := map[uint64]bool{}
	for i := uint64(0); i < 1<<16; i++ {
		m := Mix(i)
		if seen[m] {
			t.Fatalf("collision at %d", i)
		}
		seen[m] = true
	}
}
