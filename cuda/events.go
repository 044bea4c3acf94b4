package cuda

import (
	"fmt"
	"sync"
	"time"
)

// Device events: the optional Driver extension that times queued device work apart
// from the host's time to issue it. RecordEvent queues a timestamp in the driver's
// stream, taken when the work queued before it has run; EventElapsed waits for the
// later event and returns the device time between the two. On a GPU these are CUDA
// events (cuEventRecord, cuEventElapsedTime: GPU time, about 0.5 µs resolution); on
// the stand-in driver the host clock when its queue runs the event (the stand-in
// runs queued work at the next synchronisation); on the emulator, which runs every
// operation as it is issued, the host clock at RecordEvent.

// Event is a driver's handle of one device event (0 is none).
type Event uint64

// EventTimer is implemented by drivers that can time device work with events
// (the GPU driver, the emulator).
type EventTimer interface {
	// NewEvent creates an event.
	NewEvent() (Event, error)
	// RecordEvent queues e in the stream, after the work issued so far.
	RecordEvent(e Event) error
	// EventElapsed waits until end has been reached and returns the device seconds
	// from start to end; both must have been recorded.
	EventElapsed(start, end Event) (float64, error)
	// DestroyEvent releases e.
	DestroyEvent(e Event) error
}

// wrapper is a Driver that wraps another (the counting wrapper): the capability
// timerOf looks through instead of a concrete type.
type wrapper interface {
	Unwrap() Driver
}

// timerOf returns d's EventTimer, looking through wrappers.
func timerOf(d Driver) (EventTimer, bool) {
	for {
		w, ok := d.(wrapper)
		if !ok {
			break
		}
		d = w.Unwrap()
	}
	t, ok := d.(EventTimer)
	return t, ok
}

// hostEvents are events whose time is the host clock at RecordEvent: the
// emulator's, which runs every operation when it is issued.
type hostEvents struct {
	mu   sync.Mutex
	at   map[Event]time.Time // zero time: created, not recorded
	next Event
}

func (h *hostEvents) NewEvent() (Event, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.at == nil {
		h.at = map[Event]time.Time{}
	}
	h.next++
	h.at[h.next] = time.Time{}
	return h.next, nil
}

func (h *hostEvents) RecordEvent(e Event) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.at[e]; !ok {
		return fmt.Errorf("cuda: record event %d: no such event", e)
	}
	h.at[e] = time.Now()
	return nil
}

func (h *hostEvents) EventElapsed(start, end Event) (float64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t0, ok0 := h.at[start]
	t1, ok1 := h.at[end]
	if !ok0 || !ok1 || t0.IsZero() || t1.IsZero() {
		return 0, fmt.Errorf("cuda: elapsed time between events %d and %d: both must exist and be recorded", start, end)
	}
	return t1.Sub(t0).Seconds(), nil
}

func (h *hostEvents) DestroyEvent(e Event) error {
	if !forget(&h.mu, h.at, e) {
		return fmt.Errorf("cuda: destroy event %d: no such event", e)
	}
	return nil
}

// forget deletes handle k (an event, a graph) from m under mu; false when m has no k.
func forget[K comparable, V any](mu *sync.Mutex, m map[K]V, k K) bool {
	mu.Lock()
	defer mu.Unlock()
	if _, ok := m[k]; !ok {
		return false
	}
	delete(m, k)
	return true
}
