package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"syscall"
	"testing"
	"unsafe"

	"github.com/dpfil/dpfil/models"
)

// countOnly is a Driver that does no work: launches, GEMMs, memsets and copies to the
// device are accepted and dropped, copies to the host write zeros, and memory is
// address space of a PROT_NONE reservation (never touched). The backend's calls do
// not depend on the values in device memory on plain memory, so it counts exactly
// what a GPU would be asked to do at any size, instantly (docs/perf.md's cost model).
type countOnly struct {
	region []byte
	next   int
	host   [][]byte // AllocHost's memory (host memory: the graphs' slots are written)
	graphs Graph
}

func newCountOnly(t *testing.T) *countOnly {
	t.Helper()
	r, err := syscall.Mmap(-1, 0, 1<<40, syscall.PROT_NONE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		t.Skipf("reserve address space: %v", err)
	}
	return &countOnly{region: r, next: 4096}
}

func (d *countOnly) Name() string { return "count-only" }

func (d *countOnly) Alloc(n int) (unsafe.Pointer, error) {
	if d.next+n > len(d.region) {
		return nil, fmt.Errorf("count-only: out of address space")
	}
	p := unsafe.Pointer(&d.region[d.next])
	d.next += (n + 4095) &^ 4095
	return p, nil
}

func (d *countOnly) AllocManaged(n int) (unsafe.Pointer, error) {
	return nil, fmt.Errorf("count-only: no managed memory")
}
func (d *countOnly) Free(unsafe.Pointer) error                     { return nil }
func (d *countOnly) MemsetZero(unsafe.Pointer, int) error          { return nil }
func (d *countOnly) CopyHtoD(dst, src unsafe.Pointer, n int) error { return nil }
func (d *countOnly) CopyDtoD(dst, src unsafe.Pointer, n int) error { return nil }
func (d *countOnly) Launch(string, Dim3, Dim3, []uint64) error     { return nil }
func (d *countOnly) Sync() error                                   { return nil }
func (d *countOnly) Close() error                                  { return syscall.Munmap(d.region) }

func (d *countOnly) AllocHost(n int) (unsafe.Pointer, error) {
	b := make([]byte, n)
	d.host = append(d.host, b)
	return unsafe.Pointer(unsafe.SliceData(b)), nil
}
func (d *countOnly) FreeHost(unsafe.Pointer) error                       { return nil }
func (d *countOnly) CopyHtoDPinned(dst, src unsafe.Pointer, n int) error { return nil }
func (d *countOnly) CopyDtoHAsync(dst, src unsafe.Pointer, n int) error {
	clear(unsafe.Slice((*byte)(dst), n))
	return nil
}
func (d *countOnly) BeginCapture() error        { return nil }
func (d *countOnly) EndCapture() (Graph, error) { d.graphs++; return d.graphs, nil }
func (d *countOnly) LaunchGraph(Graph) error    { return nil }
func (d *countOnly) DestroyGraph(Graph) error   { return nil }

// MemInfo reports an 80 GB H100 with its context created: 79.1 of 79.6 GiB free.
func (d *countOnly) MemInfo() (free, total int64, err error) {
	return 84_929_347_584, 85_520_809_984, nil
}
func (d *countOnly) CopyDtoH(dst, src unsafe.Pointer, n int) error {
	clear(unsafe.Slice((*byte)(dst), n))
	return nil
}
func (d *countOnly) Sgemm(bool, bool, int, int, int, float32, unsafe.Pointer, int, unsafe.Pointer, int, float32, unsafe.Pointer, int) error {
	return nil
}
func (d *countOnly) SgemmStridedBatched(bool, bool, int, int, int, float32, unsafe.Pointer, int, int, unsafe.Pointer, int, int, float32, unsafe.Pointer, int, int, int) error {
	return nil
}

// residentStep runs one device-resident DP-SGD step with FIL on m (training set of
// 2·B samples, batch every other sample, k coordinates per member) and returns the
// driver's counts for the whole step and the backend's for its gradient and FIL
// parts.
func residentStep(t *testing.T, m *Model, arch models.Arch, B, k int) (step Counts, grad, fil Stats) {
	t.Helper()
	D, P := m.InputDim(), m.NumParams()
	if err := m.ResidentLoad(make([]float32, 2*B*D), 2*B, nil, 0); err != nil {
		t.Fatal(err)
	}
	if err := m.ResidentSetState(make([]float64, P), make([]float64, P)); err != nil {
		t.Fatal(err)
	}
	return residentStepAgain(t, m, arch, B, k)
}

// stepInputs are residentStep's batch (every other training row) and labels.
func stepInputs(arch models.Arch, B int) (idx, y []int) {
	idx, y = make([]int, B), make([]int, B)
	for s := range idx {
		idx[s], y[s] = 2*s, s%arch.Classes
	}
	return idx, y
}

// drawnFIL runs the trainer's FIL call of a resident step: coordinates drawn on the
// device from a PCG (the values do not change the counts); it fails unless the
// device drew them.
func drawnFIL(t *testing.T, m *Model, idx, y []int, k int, out []float64) {
	t.Helper()
	st, err := rand.NewPCG(1, 2).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	drawn, err := m.ResidentFILDrawn(idx, y, models.Clip{Mode: models.ClipSmooth, C: 1}, k, m.InputDim(), st, out)
	if err != nil {
		t.Fatal(err)
	}
	if !drawn {
		t.Fatalf("B = %d, k = %d: the device did not draw the FIL coordinates (more than one pass)", len(idx), k)
	}
}

// updateAfterDraw is the trainer's update after a drawn FIL call: the update, then
// the count of the draw it read back.
func updateAfterDraw(t *testing.T, m *Model, B int) {
	t.Helper()
	if _, err := m.ResidentUpdate(1, 0, 1, float64(B), 0.1, 0.9, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := m.ResidentCoordsUsed(); err != nil {
		t.Fatal(err)
	}
}

// filAlone runs a FIL step of residentStep's batch that follows no gradient sum
// (so it runs its own forward and backward pass) and returns the backend's counts.
func filAlone(t *testing.T, m *Model, arch models.Arch, B, k int) Stats {
	t.Helper()
	idx, y := stepInputs(arch, B)
	be := m.Backend()
	be.ResetStats()
	drawnFIL(t, m, idx, y, k, make([]float64, B))
	st := be.Stats()
	updateAfterDraw(t, m, B)
	return st
}

// residentStepAgain is residentStep on a model already loaded.
func residentStepAgain(t *testing.T, m *Model, arch models.Arch, B, k int) (step Counts, grad, fil Stats) {
	t.Helper()
	idx, y := stepInputs(arch, B)
	clip := models.Clip{Mode: models.ClipSmooth, C: 1}
	losses, out := make([]float64, B), make([]float64, B)
	before := m.DeviceCounts()
	be := m.Backend()
	be.ResetStats()
	if err := m.ResidentGradSum(idx, y, clip, losses); err != nil {
		t.Fatal(err)
	}
	grad = be.Stats()
	be.ResetStats()
	drawnFIL(t, m, idx, y, k, out)
	fil = be.Stats()
	updateAfterDraw(t, m, B)
	return m.DeviceCounts().Sub(before), grad, fil
}

// TestStepLaunchesFixed asserts that the launches + GEMMs of a device-resident
// training step with FIL do not depend on the batch or the number of FIL directions:
// the same at B = 16 and 64 and at k = 4 and 8, for mnist-cnn and cifar-cnn, on the
// counting driver (an 80 GB device) and, for mnist-cnn, on the emulator and (in the
// GPU build) the stand-in or GPU. Per-sample or per-direction loops of launches
// (docs/perf.md v7's second gradient-tangent term) fail it.
func TestStepLaunchesFixed(t *testing.T) {
	type driver struct {
		name   string
		open   func(t *testing.T) Driver
		models []string
	}
	drivers := []driver{
		{"count-only", func(t *testing.T) Driver { return newCountOnly(t) }, []string{"mnist-cnn", "cifar-cnn"}},
		{"emulator", func(*testing.T) Driver { return NewEmulator() }, []string{"mnist-cnn"}},
	}
	if HasGPU() {
		drivers = append(drivers, driver{"cuda", func(t *testing.T) Driver {
			d, err := OpenDriver("cuda")
			if err != nil {
				t.Fatal(err)
			}
			return d
		}, []string{"mnist-cnn"}})
	}
	for _, d := range drivers {
		for _, name := range d.models {
			arch, err := models.ArchByName(name)
			if err != nil {
				t.Fatal(err)
			}
			var first int64
			for _, c := range []struct{ B, k int }{{16, 4}, {64, 4}, {16, 8}, {64, 8}} {
				m, err := Open(arch, d.open(t))
				if err != nil {
					t.Fatal(err)
				}
				step, grad, fil := residentStep(t, m, arch, c.B, c.k)
				m.Close()
				work := step.Launches + step.Gemms
				t.Logf("%s, %s, B = %d, k = %d: %d launches + %d GEMMs per step (gradient %d + %d, FIL %d + %d)",
					d.name, name, c.B, c.k, step.Launches, step.Gemms, grad.Launches, grad.Gemms, fil.Launches, fil.Gemms)
				if first == 0 {
					first = work
				} else if work != first {
					t.Errorf("%s, %s, B = %d, k = %d: %d launches + GEMMs per step, %d at B = 16, k = 4", d.name, name, c.B, c.k, work, first)
				}
			}
		}
	}
}

// TestResidentStepCountsAtScale counts one device-resident DP-SGD step with FIL of
// the two configurations — mnist-cnn at batch 600 and cifar-cnn at batch 200,
// k = 50 — as a GPU would run it (an 80 GB H100's free memory sizes the chunks):
// launches, GEMMs, synchronisations and bytes each way (with -v it prints them;
// docs/perf.md's H100 prediction starts from these). The synchronisations do not
// depend on the size: 3 per step. The whole step, its FIL step (which reuses the
// gradient sum's forward and backward pass) and a FIL step on its own (which runs
// them) are each one chunk: the same launches + GEMMs as at batch 16, k = 4, and at
// most 200 (the bound). The third step of each replays the captured graphs:
// at most 10 host driver calls.
func TestResidentStepCountsAtScale(t *testing.T) {
	for _, c := range []struct {
		model    string
		batch, k int
	}{{"mnist-cnn", 600, 50}, {"cifar-cnn", 200, 50}} {
		arch, err := models.ArchByName(c.model)
		if err != nil {
			t.Fatal(err)
		}
		small, err := Open(arch, newCountOnly(t))
		if err != nil {
			t.Fatal(err)
		}
		smallStep, _, smallFIL := residentStep(t, small, arch, 16, 4)
		smallAlone := filAlone(t, small, arch, 16, 4)
		small.Close()
		m, err := Open(arch, newCountOnly(t))
		if err != nil {
			t.Fatal(err)
		}
		B := c.batch
		step, grad, fs := residentStep(t, m, arch, B, c.k)
		alone := filAlone(t, m, arch, B, c.k)
		if step.Syncs != 3 || step.Managed != 0 {
			t.Errorf("%s batch %d: %d synchronisations per step (want 3), %d bytes of managed memory", c.model, B, step.Syncs, step.Managed)
		}
		for _, w := range []struct {
			what       string
			got, small int64
		}{
			{"step", step.Launches + step.Gemms, smallStep.Launches + smallStep.Gemms},
			{"FIL step after the gradient sum", int64(fs.Launches + fs.Gemms), int64(smallFIL.Launches + smallFIL.Gemms)},
			{"FIL step on its own", int64(alone.Launches + alone.Gemms), int64(smallAlone.Launches + smallAlone.Gemms)},
		} {
			if w.got > 200 || w.got != w.small {
				t.Errorf("%s batch %d, k = %d: %s %d launches + GEMMs (want ≤ 200 and %d, as at batch 16, k = 4)", c.model, B, c.k, w.what, w.got, w.small)
			}
		}
		// The second step captures the graphs, the third replays them.
		residentStepAgain(t, m, arch, B, c.k)
		third, _, _ := residentStepAgain(t, m, arch, B, c.k)
		if third.HostCalls > 10 || third.GraphLaunches != 2 || third.Syncs != 3 {
			t.Errorf("%s batch %d, a replayed step: %d host driver calls (want ≤ 10), %d graph launches, %d syncs",
				c.model, B, third.HostCalls, third.GraphLaunches, third.Syncs)
		}
		t.Logf("%s, batch %d, k = %d, replayed: %d host driver calls (%d graph launches), %d launches + %d GEMMs queued",
			c.model, B, c.k, third.HostCalls, third.GraphLaunches, third.Launches, third.Gemms)
		t.Logf("%s, batch %d, k = %d: step %d launches + %d GEMMs (gradient %d + %d, FIL %d + %d; a FIL step on its own %d + %d), %d syncs, %d bytes in (%d of indices), %d out; %d backend calls",
			c.model, B, c.k, step.Launches, step.Gemms, grad.Launches, grad.Gemms, fs.Launches, fs.Gemms, alone.Launches, alone.Gemms, step.Syncs,
			step.HtoDBytes, 4*B, step.DtoHBytes, grad.Calls+fs.Calls+1)
		m.Close()
	}
}

// TestChunkBudget checks the chunk budget's sizing from free device memory.
func TestChunkBudget(t *testing.T) {
	const gib = 1 << 30
	for _, c := range []struct {
		free, total int64
		want        int
	}{
		{79 * gib, 80 * gib, (79*gib - 8*gib) / 4}, // a tenth of the device kept free
		{8 * gib, 8 * gib, (8*gib - 1*gib) / 4},    // at least 1 GiB kept free
		{gib / 2, 8 * gib, minChunkBudget},         // never below the minimum
	} {
		if got := chunkBudgetFor(c.free, c.total); got != c.want {
			t.Errorf("chunkBudgetFor(%d, %d) = %d, want %d", c.free, c.total, got, c.want)
		}
	}
	be, err := NewDeviceBackend(newCountOnly(t))
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	free, total, _ := be.drv.MemInfo()
	if got, want := be.ChunkBudget(), chunkBudgetFor(free, total); got != want || be.ChunkBufferCap() != math.MaxInt32 {
		t.Errorf("count-only backend: budget %d (want %d), buffer cap %d", got, want, be.ChunkBufferCap())
	}
}
