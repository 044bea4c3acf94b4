package sweep

import (
	"strings"
	"testing"
)

func TestShardsPartitionGrid(t *testing.T) {
	jobs := make([]Job, 23)
	for i := range jobs {
		jobs[i] = Job{Index: i, Hash: string(rune('a' + i))}
	}
	for _, n := range []int{1, 2, 3, 4, 7, 23, 30} {
		seen := map[int]int{}
		minSize, maxSize := len(jobs), 0
		for i := 0; i < n; i++ {
			part := Shard{I: i, N: n}.Select(jobs)
			minSize, maxSize = min(minSize, len(part)), max(maxSize, len(part))
			for k, j := range part {
				if k > 0 && part[k-1].Index >= j.Index {
					t.Fatalf("n=%d shard %d not in grid order", n, i)
				}
				if prev, dup := seen[j.Index]; dup {
					t.Fatalf("n=%d: job %d in shards %d and %d", n, j.Index, prev, i)
				}
				seen[j.Index] = i
			}
		}
		if len(seen) != len(jobs) {
			t.Fatalf("n=%d: union of shards has %d jobs, want %d", n, len(seen), len(jobs))
		}
		if maxSize-minSize > 1 {
			t.Fatalf("n=%d: shard sizes %d..%d, want balanced", n, minSize, maxSize)
		}
	}
}

func TestParseShard(t *testing.T) {
	good := map[string]Shard{"0/1": {0, 1}, "3/4": {3, 4}, " 2/10 ": {2, 10}}
	for s, want := range good {
		got, err := ParseShard(s)
		if err != nil || got != want {
			t.Fatalf("ParseShard(%q) = %v, %v; want %v", s, got, err, want)
		}
		if strings.TrimSpace(s) != got.String() {
			t.Fatalf("String() = %q", got.String())
		}
	}
	for _, s := range []string{"", "1", "4/4", "-1/3", "0/0", "a/2", "1/b", "1/2/3"} {
		if _, err := ParseShard(s); err == nil {
			t.Fatalf("ParseShard(%q): want error", s)
		}
	}
}
