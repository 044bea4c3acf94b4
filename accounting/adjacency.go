package accounting

import "github.com/dpfil/dpfil/internal/enumtext"

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

// adjacencyText spells the adjacencies in flags and JSON.
var adjacencyText = enumtext.Text[Adjacency]{Type: "Adjacency", What: "adjacency",
	Names:   []string{AddRemove: "add-remove", ReplaceOne: "replace-one"},
	Aliases: map[string]Adjacency{"addremove": AddRemove, "add/remove": AddRemove, "replace": ReplaceOne, "substitution": ReplaceOne}}

// String returns the flag spelling of the adjacency.
func (a Adjacency) String() string { return adjacencyText.String(a) }

// MarshalText writes the flag spelling (so JSON carries "add-remove"/"replace-one").
func (a Adjacency) MarshalText() ([]byte, error) { return adjacencyText.Marshal(a) }

// UnmarshalText parses the flag spelling.
func (a *Adjacency) UnmarshalText(b []byte) error { return adjacencyText.Unmarshal(b, a) }

// ParseAdjacency parses "add-remove" or "replace-one" (also "addremove",
// "add/remove", "replace", "substitution").
func ParseAdjacency(s string) (Adjacency, error) { return adjacencyText.Parse(s) }

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

// samplingText spells the samplings in flags and JSON.
var samplingText = enumtext.Text[Sampling]{Type: "Sampling", What: "sampling",
	Names: []string{SamplingPoisson: "poisson", SamplingUniform: "uniform", SamplingShuffle: "shuffle"}}

// String returns the flag spelling of the sampling.
func (s Sampling) String() string { return samplingText.String(s) }

// MarshalText writes the flag spelling.
func (s Sampling) MarshalText() ([]byte, error) { return samplingText.Marshal(s) }

// UnmarshalText parses the flag spelling.
func (s *Sampling) UnmarshalText(b []byte) error { return samplingText.Unmarshal(b, s) }

// ParseSampling parses "poisson", "uniform" or "shuffle".
func ParseSampling(s string) (Sampling, error) { return samplingText.Parse(s) }
