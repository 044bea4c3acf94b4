package train

import (
	"fmt"
	"math/rand/v2"

	"github.com/dpfil/dpfil/internal/splitmix"
)

// Stream identifiers: each kind of randomness of a repeat has its own PCG stream so
// that changing one (e.g. turning FIL off) does not change the others.
const (
	streamInit uint64 = iota + 1
	streamSampler
	streamCoords
	streamNoise
)

// splitmix64 is one step of the SplitMix64 generator from state x, used as a seed
// mixer.
func splitmix64(x uint64) uint64 { return splitmix.Next(&x) }

// deriveSeed maps (root seed, repeat, stream) to a 64-bit seed; distinct inputs give
// statistically independent seeds.
func deriveSeed(root uint64, repeat int, stream uint64) uint64 {
	h := splitmix64(root)
	h = splitmix64(h ^ uint64(repeat)*0xd1342543de82ef95)
	return splitmix64(h ^ stream*0x9e3779b97f4a7c15)
}

// newStream returns the PCG generator of one stream of one repeat.
func newStream(root uint64, repeat int, stream uint64) *rand.PCG {
	s := deriveSeed(root, repeat, stream)
	return rand.NewPCG(s, splitmix64(s^0x5851f42d4c957f2d))
}

// rngState is a checkpointable PCG: the generator and its serialised state.
type rngState struct {
	pcg *rand.PCG
	r   *rand.Rand
}

func newRNG(pcg *rand.PCG) *rngState { return &rngState{pcg: pcg, r: rand.New(pcg)} }

func (s *rngState) marshal() ([]byte, error) {
	b, err := s.pcg.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("save RNG state: %w", err)
	}
	return b, nil
}

func (s *rngState) unmarshal(b []byte) error {
	if err := s.pcg.UnmarshalBinary(b); err != nil {
		return fmt.Errorf("restore RNG state: %w", err)
	}
	return nil
}
