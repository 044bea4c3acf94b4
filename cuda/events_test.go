package cuda

import (
	"strings"
	"testing"

	"github.com/dpfil/dpfil/models"
)

// TestEvents records two events around a kernel on every driver and reads the
// time between them; an event never recorded, or unknown, is an error, not a time.
func TestEvents(t *testing.T) {
	for _, drv := range testDrivers(t) {
		t.Run(drv.Name(), func(t *testing.T) {
			et, ok := timerOf(newCounted(drv))
			if !ok {
				t.Fatalf("%s is not an EventTimer", drv.Name())
			}
			const n = 1 << 16
			p, err := drv.Alloc(4 * n)
			if err != nil {
				t.Fatal(err)
			}
			defer drv.Free(p)
			a, err := et.NewEvent()
			if err != nil {
				t.Fatal(err)
			}
			b, err := et.NewEvent()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := et.EventElapsed(a, b); err == nil {
				t.Error("EventElapsed of events never recorded: no error")
			}
			if err := et.RecordEvent(a); err != nil {
				t.Fatal(err)
			}
			if err := drv.Launch("k_zero", Dim3{64, 1, 1}, Dim3{256, 1, 1}, Args(n, p)); err != nil {
				t.Fatal(err)
			}
			if err := et.RecordEvent(b); err != nil {
				t.Fatal(err)
			}
			sec, err := et.EventElapsed(a, b)
			if err != nil {
				t.Fatal(err)
			}
			if sec < 0 || sec > 60 {
				t.Errorf("%g s between the events", sec)
			}
			for _, e := range []Event{a, b} {
				if err := et.DestroyEvent(e); err != nil {
					t.Error(err)
				}
			}
			if err := et.DestroyEvent(a); err == nil {
				t.Error("destroying an event twice: no error")
			}
			if err := drv.Sync(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestTimeDevice times a clipped gradient sum of mnist-cnn on the device: the host's
// wait and issue times add up to the wall time, the wait is the copy of the losses
// (one synchronisation), and the device time is measured. A driver without events
// is refused with an error.
func TestTimeDevice(t *testing.T) {
	arch, err := models.ArchByName("mnist-cnn")
	if err != nil {
		t.Fatal(err)
	}
	for _, drv := range testDrivers(t) {
		t.Run(drv.Name(), func(t *testing.T) {
			m, err := Open(arch, drv)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			const B = 4
			D, P := m.InputDim(), m.NumParams()
			params, x, sum := m.DeviceCopy(make([]float32, P)), m.DeviceCopy(make([]float32, B*D)), m.DeviceCopy(make([]float32, P))
			y, losses := []int{1, 2, 3, 4}, make([]float64, B)
			clip := models.Clip{Mode: models.ClipSmooth, C: 1}
			before := m.DeviceCounts()
			tm, err := m.TimeDevice(func() error { return m.ClippedGradSum(params, x, y, clip, sum, losses) })
			if err != nil {
				t.Fatal(err)
			}
			if tm.Wall <= 0 || tm.Wait < 0 || tm.Wait > tm.Wall || tm.Issue != tm.Wall-tm.Wait || tm.GPU < 0 {
				t.Errorf("timing %+v", tm)
			}
			if drv.Name() != "emulator" && (tm.GPU <= 0 || tm.Wait <= 0) {
				t.Errorf("%s: no device time or no wait measured: %+v", drv.Name(), tm)
			}
			if s := m.DeviceCounts().Sub(before).Syncs; s < 1 {
				t.Errorf("%d synchronisations in the timed call", s)
			}
			t.Logf("%s: wall %v = issue %v + wait %v; device %v", drv.Name(), tm.Wall, tm.Issue, tm.Wait, tm.GPU)
		})
	}
	m, err := Open(arch, keepOpen{NewEmulator()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.TimeDevice(func() error { return nil }); err == nil || !strings.Contains(err.Error(), "no events") {
		t.Errorf("TimeDevice on a driver without events: %v", err)
	}
}
