package models

import (
	"math/rand/v2"
	"runtime"
	"testing"
)

// heapDuring runs fn after a garbage collection and returns the bytes it allocated
// on the Go heap (the upper bound of how far the heap can grow while it runs) and
// the bytes still live after it and another collection (what the network keeps for
// the next call: its workspaces).
func heapDuring(t *testing.T, fn func() error) (alloc, kept uint64) {
	t.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	total, live := ms.TotalAlloc, ms.HeapAlloc
	if err := fn(); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&ms)
	alloc = ms.TotalAlloc - total
	runtime.GC()
	runtime.ReadMemStats(&ms)
	if ms.HeapAlloc > live {
		kept = ms.HeapAlloc - live
	}
	return alloc, kept
}

// TestLargeBatchMemoryBounded checks that the workspace budget bounds the memory of
// a step as the batch grows (issue 30 item 4). On a fresh mnist-cnn network, the
// clipped gradient sum of 4 096 samples allocates (and keeps) no more than that of
// 256 plus a few bytes per sample (losses, norms), and at most the budget's bytes
// per worker. The FIL step (k = 8) under a 1 Mi-value budget keeps no more at 512
// samples than at 32 and at most the budget per worker (it allocates a little
// garbage per chunk, so its allocation is not bounded; its kept workspaces are).
// Without the chunking (one chunk of the whole batch) the 4 096-sample step's
// buffers take 1.4 GB, 10 times the budget, and both checks fail (tried).
func TestLargeBatchMemoryBounded(t *testing.T) {
	arch, err := ArchByName("mnist-cnn")
	if err != nil {
		t.Fatal(err)
	}
	const perSample = 256 // bytes a step may allocate per sample outside the workspaces
	clip := Clip{Mode: ClipSmooth, C: 1}
	problem := func(n *Network[float32], batch int) (params, x []float32, y []int) {
		rng := rand.New(rand.NewPCG(uint64(batch), 3))
		params = make([]float32, n.NumParams())
		for i := range params {
			params[i] = float32(rng.NormFloat64() * 0.05)
		}
		x = make([]float32, batch*n.d)
		for i := range x {
			x[i] = rng.Float32()
		}
		y = make([]int, batch)
		for i := range y {
			y[i] = rng.IntN(arch.Classes)
		}
		return params, x, y
	}
	// Two workers whatever the machine: the small batch then has more chunks than
	// workers, so both batches allocate the same number of worker workspaces.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	workers := uint64(NewCPUBackend[float32]().Workers())
	t.Run("grad", func(t *testing.T) {
		step := func(batch int) (alloc, budget uint64) {
			n, err := NewNetwork(arch, NewCPUBackend[float32]())
			if err != nil {
				t.Fatal(err)
			}
			params, x, y := problem(n, batch)
			sum, losses := make([]float32, n.p), make([]float64, batch)
			alloc, _ = heapDuring(t, func() error { return n.ClippedGradSum(params, x, y, batch, clip, sum, losses) })
			return alloc, uint64(n.budget) * 4 * workers
		}
		small, _ := step(256)
		big, budget := step(4096)
		t.Logf("clipped gradient sum allocated %d B at batch 256, %d B at 4 096 (budget %d B)", small, big, budget)
		if big > small+perSample*4096 {
			t.Errorf("batch 4 096 allocated %d B, more than batch 256's %d B + %d B per sample: memory grows with the batch", big, small, perSample)
		}
		if big > budget {
			t.Errorf("batch 4 096 allocated %d B, over the workspace budget (%d B)", big, budget)
		}
	})
	t.Run("fil", func(t *testing.T) {
		const budgetValues, k = 1 << 20, 8
		step := func(batch int) (kept uint64) {
			n, err := NewNetwork(arch, NewCPUBackend[float32]())
			if err != nil {
				t.Fatal(err)
			}
			n.budget = budgetValues
			params, x, y := problem(n, batch)
			rng := rand.New(rand.NewPCG(1, 2))
			coords := make([][]int, batch)
			for s := range coords {
				coords[s] = rng.Perm(n.d)[:k]
			}
			out := make([]float64, batch)
			_, kept = heapDuring(t, func() error { return n.FILSqNorms(params, x, y, batch, clip, coords, out) })
			runtime.KeepAlive(n)
			return kept
		}
		small, big := step(32), step(512)
		budget := uint64(budgetValues) * 4 * workers
		t.Logf("FIL step kept %d B at batch 32, %d B at 512 (budget %d B)", small, big, budget)
		if big > small+perSample*512 {
			t.Errorf("batch 512 kept %d B, more than batch 32's %d B + %d B per sample: memory grows with the batch", big, small, perSample)
		}
		if big > budget {
			t.Errorf("batch 512 kept %d B, over the workspace budget (%d B)", big, budget)
		}
	})
}
