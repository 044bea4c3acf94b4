// Package parallel runs a loop over index ranges on several goroutines: the one
// fan-out of contiguous chunks that the code base's data-parallel loops share.
package parallel

import "sync"

// Chunks calls f(lo, hi) for the ranges [0, chunk), [chunk, 2·chunk), … covering
// [0, n) (the last one ends at n), each on its own goroutine, and returns when all
// have returned. f must be safe to call concurrently on disjoint ranges. chunk < 1
// or chunk ≥ n calls f(0, n) once on the caller's goroutine.
func Chunks(n, chunk int, f func(lo, hi int)) {
	if n <= 0 {
		return
	}
	if chunk < 1 || chunk >= n {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += chunk {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			f(lo, hi)
		}(lo, min(lo+chunk, n))
	}
	wg.Wait()
}
