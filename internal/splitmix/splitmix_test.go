package splitmix

import "testing"

// The reference splitmix64.c (Vigna) seeded with 1234567 and with 0 gives these
// first outputs.
func TestNextMatchesReference(t *testing.T) {
	for _, c := range []struct {
		seed uint64
		want []uint64
	}{
		{1234567, []uint64{6457827717110365317, 3203168211198807973, 9817491932198370423, 4593380528125082431, 16408922859458223821}},
		{0, []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f}},
	} {
		s := c.seed
		for i, w := range c.want {
			if got := Next(&s); got != w {
				t.Fatalf("seed %d output %d = %#x, want %#x", c.seed, i, got, w)
			}
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
