package train

import (
	"fmt"
)

// sampler draws the training indices of each step.
type sampler interface {
	// next returns the batch of the next step (indices into the training set, sorted
	// ascending for Poisson, in permutation order for shuffle). The slice is reused.
	next() []int
	// state and restore checkpoint the sampler (its RNG included).
	state() (samplerState, error)
	restore(samplerState) error
}

// samplerState is the checkpointed state of a sampler.
type samplerState struct {
	Kind  string
	RNG   []byte
	Perm  []int32 // shuffle: the current epoch's permutation
	Pos   int     // shuffle: position of the next batch in Perm
	Epoch int     // shuffle: number of permutations drawn so far
}

// shuffleSampler draws fixed-size batches without replacement: a fresh permutation of
// the N indices every epoch, cut into ⌊N/B⌋ consecutive batches (a remainder smaller
// than B is dropped and the data reshuffled, so every batch has exactly B samples).
type shuffleSampler struct {
	n, b  int
	rng   *rngState
	perm  []int32
	pos   int
	epoch int
	out   []int
}

func newShuffleSampler(n, b int, rng *rngState) (*shuffleSampler, error) {
	if b < 1 || b > n {
		return nil, fmt.Errorf("shuffle sampler: batch %d must be in [1, N = %d]", b, n)
	}
	return &shuffleSampler{n: n, b: b, rng: rng, pos: n, out: make([]int, b)}, nil
}

func (s *shuffleSampler) next() []int {
	if s.pos+s.b > s.n {
		if s.perm == nil {
			s.perm = make([]int32, s.n)
		}
		for i := range s.perm {
			s.perm[i] = int32(i)
		}
		s.rng.r.Shuffle(s.n, func(i, j int) { s.perm[i], s.perm[j] = s.perm[j], s.perm[i] })
		s.pos = 0
		s.epoch++
	}
	for i := range s.out {
		s.out[i] = int(s.perm[s.pos+i])
	}
	s.pos += s.b
	return s.out
}

func (s *shuffleSampler) state() (samplerState, error) {
	b, err := s.rng.marshal()
	if err != nil {
		return samplerState{}, err
	}
	return samplerState{Kind: SamplingShuffle, RNG: b, Perm: append([]int32(nil), s.perm...), Pos: s.pos, Epoch: s.epoch}, nil
}

func (s *shuffleSampler) restore(st samplerState) error {
	if st.Kind != SamplingShuffle {
		return fmt.Errorf("restore sampler: checkpoint has %q, run uses %q", st.Kind, SamplingShuffle)
	}
	if st.Perm != nil && len(st.Perm) != s.n || st.Pos < 0 || st.Pos > s.n || st.Perm == nil && st.Pos != s.n {
		return fmt.Errorf("restore sampler: inconsistent shuffle state (perm %d, pos %d, N %d)", len(st.Perm), st.Pos, s.n)
	}
	for _, v := range st.Perm {
		if v < 0 || int(v) >= s.n {
			return fmt.Errorf("restore sampler: permutation index %d out of range [0, %d)", v, s.n)
		}
	}
	if err := s.rng.unmarshal(st.RNG); err != nil {
		return err
	}
	s.perm = append([]int32(nil), st.Perm...)
	if st.Perm == nil {
		s.perm = nil
	}
	s.pos, s.epoch = st.Pos, st.Epoch
	return nil
}

// poissonSampler includes every sample independently with probability q = B/N, so
// batch sizes are Binomial(N, q) and may be empty.
type poissonSampler struct {
	n   int
	q   float64
	rng *rngState
	out []int
}

func newPoissonSampler(n, b int, rng *rngState) (*poissonSampler, error) {
	if b < 1 || b > n {
		return nil, fmt.Errorf("poisson sampler: batch %d must be in [1, N = %d]", b, n)
	}
	return &poissonSampler{n: n, q: float64(b) / float64(n), rng: rng, out: make([]int, 0, 2*b+16)}, nil
}

func (s *poissonSampler) next() []int {
	s.out = s.out[:0]
	for i := 0; i < s.n; i++ {
		if s.rng.r.Float64() < s.q {
			s.out = append(s.out, i)
		}
	}
	return s.out
}

func (s *poissonSampler) state() (samplerState, error) {
	b, err := s.rng.marshal()
	if err != nil {
		return samplerState{}, err
	}
	return samplerState{Kind: SamplingPoisson, RNG: b}, nil
}

func (s *poissonSampler) restore(st samplerState) error {
	if st.Kind != SamplingPoisson {
		return fmt.Errorf("restore sampler: checkpoint has %q, run uses %q", st.Kind, SamplingPoisson)
	}
	return s.rng.unmarshal(st.RNG)
}

func newSampler(kind string, n, b int, rng *rngState) (sampler, error) {
	switch kind {
	case SamplingShuffle:
		return newShuffleSampler(n, b, rng)
	case SamplingUniform:
		return newUniformSampler(n, b, rng)
	case SamplingPoisson:
		return newPoissonSampler(n, b, rng)
	}
	return nil, fmt.Errorf("unknown sampling scheme %q", kind)
}

// uniformSampler draws an independent subset of exactly B of the N indices at every
// step, uniformly without replacement (a partial Fisher–Yates shuffle of a
// persistent permutation, which stays a uniform permutation after every step).
type uniformSampler struct {
	n, b int
	rng  *rngState
	perm []int32
	out  []int
}

func newUniformSampler(n, b int, rng *rngState) (*uniformSampler, error) {
	if b < 1 || b > n {
		return nil, fmt.Errorf("uniform sampler: batch %d must be in [1, N = %d]", b, n)
	}
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(i)
	}
	return &uniformSampler{n: n, b: b, rng: rng, perm: p, out: make([]int, b)}, nil
}

func (s *uniformSampler) next() []int {
	for i := 0; i < s.b; i++ {
		j := i + s.rng.r.IntN(s.n-i)
		s.perm[i], s.perm[j] = s.perm[j], s.perm[i]
		s.out[i] = int(s.perm[i])
	}
	return s.out
}

func (s *uniformSampler) state() (samplerState, error) {
	b, err := s.rng.marshal()
	if err != nil {
		return samplerState{}, err
	}
	return samplerState{Kind: SamplingUniform, RNG: b, Perm: append([]int32(nil), s.perm...)}, nil
}

func (s *uniformSampler) restore(st samplerState) error {
	if st.Kind != SamplingUniform {
		return fmt.Errorf("restore sampler: checkpoint has %q, run uses %q", st.Kind, SamplingUniform)
	}
	if len(st.Perm) != s.n {
		return fmt.Errorf("restore sampler: uniform permutation has %d entries, want %d", len(st.Perm), s.n)
	}
	seen := make([]bool, s.n)
	for _, v := range st.Perm {
		if v < 0 || int(v) >= s.n || seen[v] {
			return fmt.Errorf("restore sampler: uniform permutation is not a permutation of 0…%d", s.n-1)
		}
		seen[v] = true
	}
	copy(s.perm, st.Perm)
	return s.rng.unmarshal(st.RNG)
}
