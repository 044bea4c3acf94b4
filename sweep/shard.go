package sweep

import (
	"fmt"
	"strconv"
	"strings"
)

// Shard selects one of n deterministic, disjoint slices of a sweep: shard i holds the
// jobs whose grid index is congruent to i modulo n, so the union of shards 0..n−1 is
// the whole grid and shard sizes differ by at most one.
type Shard struct {
	I, N int
}

// ParseShard parses "i/n" with 0 <= i < n.
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Shard{}, fmt.Errorf("shard %q: want i/n, e.g. 0/4", s)
	}
	i, err := strconv.Atoi(a)
	if err != nil {
		return Shard{}, fmt.Errorf("shard %q: index: %w", s, err)
	}
	n, err := strconv.Atoi(b)
	if err != nil {
		return Shard{}, fmt.Errorf("shard %q: count: %w", s, err)
	}
	sh := Shard{I: i, N: n}
	if err := sh.Validate(); err != nil {
		return Shard{}, err
	}
	return sh, nil
}

// Validate checks 0 <= I < N.
func (s Shard) Validate() error {
	if s.N < 1 || s.I < 0 || s.I >= s.N {
		return fmt.Errorf("shard %d/%d: want 0 <= i < n", s.I, s.N)
	}
	return nil
}

// String formats the shard as "i/n".
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.I, s.N) }

// Contains reports whether the job with grid index idx belongs to the shard.
func (s Shard) Contains(idx int) bool { return idx%s.N == s.I }

// Select returns the jobs of the shard, in grid order.
func (s Shard) Select(jobs []Job) []Job {
	var out []Job
	for _, j := range jobs {
		if s.Contains(j.Index) {
			out = append(out, j)
		}
	}
	return out
}

// Set parses "i/n" into s (ParseShard): a Shard is a command-line flag value.
func (s *Shard) Set(v string) error {
	sh, err := ParseShard(v)
	if err != nil {
		return err
	}
	*s = sh
	return nil
}

// Type names the flag value's form.
func (s *Shard) Type() string { return "i/n" }
