// Package splitmix is the one seed mixer every dpfil package derives its random
// streams from: Steele, Lea and Flood's SplitMix64 (as in Vigna's reference
// splitmix64.c). It is a mixer for seeds, not a generator for bulk draws.
package splitmix

// Golden is the SplitMix64 increment, ⌊2⁶⁴/φ⌋.
const Golden = 0x9e3779b97f4a7c15

// Mix is SplitMix64's output function (the finaliser): a bijection of uint64 whose
// outputs for consecutive or structured inputs look independent.
func Mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Next advances the generator state by Golden and returns Mix of the new state.
func Next(state *uint64) uint64 {
	*state += Golden
	return Mix(*state)
}
