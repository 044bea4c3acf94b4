package cuda

import (
	"fmt"
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

// TestResidentStepCountsAtScale counts one device-resident DP-SGD step with FIL of
// the two configurations — mnist-cnn at batch 600 and cifar-cnn at batch 200,
// k = 50 — as a GPU would run it: launches, GEMMs, synchronisations and bytes each
// way (with -v it prints them; docs/perf.md's H100 prediction starts from these).
// The synchronisations do not depend on the size: 3 per step.
func TestResidentStepCountsAtScale(t *testing.T) {
	for _, c := range []struct {
		model    string
		batch, k int
	}{{"mnist-cnn", 600, 50}, {"cifar-cnn", 200, 50}, {"mnist-cnn", 60, 50}} {
		arch, err := models.ArchByName(c.model)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Open(arch, newCountOnly(t))
		if err != nil {
			t.Fatal(err)
		}
		D, P, B := m.InputDim(), m.NumParams(), c.batch
		if err := m.ResidentLoad(make([]float32, 2*B*D), 2*B, nil, 0); err != nil {
			t.Fatal(err)
		}
		if err := m.ResidentSetState(make([]float64, P), make([]float64, P)); err != nil {
			t.Fatal(err)
		}
		idx, y, coords := make([]int, B), make([]int, B), make([][]int, B)
		for s := range idx {
			idx[s], y[s] = 2*s, s%arch.Classes
			coords[s] = make([]int, c.k)
			for j := range coords[s] {
				coords[s][j] = (s*c.k + j) % D
			}
		}
		clip := models.Clip{Mode: models.ClipSmooth, C: 1}
		losses, fil := make([]float64, B), make([]float64, B)
		before := m.DeviceCounts()
		be := m.Backend()
		be.ResetStats()
		if err := m.ResidentGradSum(idx, y, clip, losses); err != nil {
			t.Fatal(err)
		}
		grad := be.Stats()
		be.ResetStats()
		if err := m.ResidentFIL(idx, y, clip, coords, fil); err != nil {
			t.Fatal(err)
		}
		fs := be.Stats()
		if _, err := m.ResidentUpdate(1, 0, 1, float64(B), 0.1, 0.9, 0); err != nil {
			t.Fatal(err)
		}
		step := m.DeviceCounts().Sub(before)
		if step.Syncs != 3 || step.Managed != 0 {
			t.Errorf("%s batch %d: %d synchronisations per step (want 3), %d bytes of managed memory", c.model, B, step.Syncs, step.Managed)
		}
		t.Logf("%s, batch %d, k = %d: step %d launches + %d GEMMs (gradient %d + %d, FIL %d + %d), %d syncs, %d bytes in (%d of indices), %d out; %d backend calls",
			c.model, B, c.k, step.Launches, step.Gemms, grad.Launches, grad.Gemms, fs.Launches, fs.Gemms, step.Syncs,
			step.HtoDBytes, 4*B, step.DtoHBytes, grad.Calls+fs.Calls+1)
		m.Close()
	}
}
