package accounting

import "fmt"

// Adjacency names the neighbouring relation a privacy guarantee holds for.
type Adjacency int

const (
	// AddRemove: the datasets differ by adding or removing one record (the usual
	// DP-SGD ε of Opacus, TF Privacy and dp_accounting).
	AddRemove Adjacency = iota
	// ReplaceOne: the datasets have the same size and differ in one record (the
	// relation of Guo et al.'s Theorem 1, whose proof compares D ∪ {z} with D ∪ {z′}).
	ReplaceOne
)

// String returns the flag spelling of the adjacency.
func (a Adjacency) String() string {
	switch a {
	case AddRemove:
		return "add-remove"
	case ReplaceOne:
		return "replace-one"
	}
	return fmt.Sprintf("Adjacency(%d)", int(a))
}

// MarshalText writes the flag spelling (so JSON carries "add-remove"/"replace-one").
func (a Adjacency) MarshalText() ([]byte, error) {
	if a != AddRemove && a != ReplaceOne {
		return nil, fmt.Errorf("invalid adjacency %d", int(a))
	}
	return []byte(a.String()), nil
}

// UnmarshalText parses the flag spelling.
func (a *Adjacency) UnmarshalText(b []byte) error {
	v, err := ParseAdjacency(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// ParseAdjacency parses "add-remove" or "replace-one".
func ParseAdjacency(s string) (Adjacency, error) {
	switch s {
	case "add-remove", "addremove", "add/remove":
		return AddRemove, nil
	case "replace-one", "replace", "substitution":
		return ReplaceOne, nil
	}
	return 0, fmt.Errorf("unknown adjacency %q (want add-remove or replace-one)", s)
}

// Sampling names how DP-SGD draws its batches.
type Sampling int

const (
	// SamplingPoisson: each record joins each step's batch independently with
	// probability q (the sampling the subsampled-Gaussian accountants are exact for).
	SamplingPoisson Sampling = iota
	// SamplingUniform: each step draws an independent fixed-size subset of B of the
	// N records without replacement (q = B/N); exact accounting under replace-one.
	SamplingUniform
	// SamplingShuffle: one random permutation per epoch cut into consecutive batches
	// (the papers' choice). No subsampled accountant is exact for it: the rigorous
	// accounting claims no amplification (one Gaussian release per record and epoch),
	// the Poisson accounting at q = B/N is an approximation.
	SamplingShuffle
)

// String returns the flag spelling of the sampling.
func (s Sampling) String() string {
	switch s {
	case SamplingPoisson:
		return "poisson"
	case SamplingUniform:
		return "uniform"
	case SamplingShuffle:
		return "shuffle"
	}
	return fmt.Sprintf("Sampling(%d)", int(s))
}

// MarshalText writes the flag spelling.
func (s Sampling) MarshalText() ([]byte, error) {
	if s < SamplingPoisson || s > SamplingShuffle {
		return nil, fmt.Errorf("invalid sampling %d", int(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText parses the flag spelling.
func (s *Sampling) UnmarshalText(b []byte) error {
	v, err := ParseSampling(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// ParseSampling parses "poisson", "uniform" or "shuffle".
func ParseSampling(s string) (Sampling, error) {
	switch s {
	case "poisson":
		return SamplingPoisson, nil
	case "uniform":
		return SamplingUniform, nil
	case "shuffle":
		return SamplingShuffle, nil
	}
	return 0, fmt.Errorf("unknown sampling %q (want poisson, uniform or shuffle)", s)
}
