package cuda

import (
	"errors"
	"fmt"
	"time"
)

// DeviceTiming is one timed call of device work: where its wall time went on the
// host and how long the device worked.
type DeviceTiming struct {
	// Wall is the call's wall time; Wait the part the host spent waiting for the
	// device (copies of results to the host, synchronisations); Issue = Wall − Wait,
	// the host's time to issue the work (and its own host-side steps).
	Wall, Wait, Issue time.Duration
	// GPU is the device time between an event recorded before the call's first
	// operation and one after its last (EventTimer).
	GPU time.Duration
}

// TimeDevice runs fn, which issues device work on the model, between two device
// events and returns its timing; it waits for the device at the end. The driver must
// be an EventTimer (the GPU driver, the emulator).
func (m *Model) TimeDevice(fn func() error) (DeviceTiming, error) {
	var t DeviceTiming
	b := m.be
	et, ok := timerOf(b.drv)
	if !ok {
		return t, fmt.Errorf("cuda: the driver %s cannot time device work (no events)", b.drv.Name())
	}
	start, err := et.NewEvent()
	if err != nil {
		return t, err
	}
	end, err := et.NewEvent()
	if err != nil {
		return t, errors.Join(err, et.DestroyEvent(start))
	}
	defer func() { _ = et.DestroyEvent(start); _ = et.DestroyEvent(end) }()
	w0, t0 := b.drv.waitTime(), time.Now()
	if err := et.RecordEvent(start); err != nil {
		return t, err
	}
	if err := fn(); err != nil {
		return t, err
	}
	if err := et.RecordEvent(end); err != nil {
		return t, err
	}
	t.Wall, t.Wait = time.Since(t0), b.drv.waitTime()-w0
	t.Issue = t.Wall - t.Wait
	sec, err := et.EventElapsed(start, end)
	if err != nil {
		return t, err
	}
	t.GPU = time.Duration(sec * 1e9)
	return t, nil
}

// TimeDeviceSeconds is TimeDevice in seconds (wall, host wait, device), for callers
// that do not import this package (models/enginebench).
func (m *Model) TimeDeviceSeconds(fn func() error) (wall, wait, gpu float64, err error) {
	t, err := m.TimeDevice(fn)
	return t.Wall.Seconds(), t.Wait.Seconds(), t.GPU.Seconds(), err
}
