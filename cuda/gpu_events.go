//go:build dpfil_cuda

package cuda

import (
	"fmt"
	"sync"

	"gorgonia.org/cu"
)

// gpuEvents are a GPU's CUDA events by handle.
type gpuEvents struct {
	mu   sync.Mutex
	ev   map[Event]cu.Event
	next Event
}

func (g *GPU) event(e Event) (cu.Event, error) {
	g.events.mu.Lock()
	defer g.events.mu.Unlock()
	ev, ok := g.events.ev[e]
	if !ok {
		return ev, fmt.Errorf("no such event %d", e)
	}
	return ev, nil
}

// NewEvent creates a CUDA event (cuEventCreate, with timing).
func (g *GPU) NewEvent() (Event, error) {
	leave, err := g.enter("create event")
	if err != nil {
		return 0, err
	}
	defer leave()
	ev, err := cu.MakeEvent(cu.DefaultEvent)
	if err != nil {
		return 0, fmt.Errorf("cuda: create event: %w", err)
	}
	g.events.mu.Lock()
	defer g.events.mu.Unlock()
	if g.events.ev == nil {
		g.events.ev = map[Event]cu.Event{}
	}
	g.events.next++
	g.events.ev[g.events.next] = ev
	return g.events.next, nil
}

// RecordEvent queues e on the driver's stream (cuEventRecord), after the work queued there.
func (g *GPU) RecordEvent(e Event) error {
	return g.onEvent("record event", e, func(ev cu.Event) error { return ev.Record(g.stream) })
}

// onEvent enters the driver, looks up e and calls f with its CUDA event; what names
// the call in errors ("record event": "cuda: record event 3: no such event 3").
func (g *GPU) onEvent(what string, e Event, f func(cu.Event) error) error {
	wrap := func(err error) error {
		if err != nil {
			return fmt.Errorf("cuda: %s %d: %w", what, e, err)
		}
		return nil
	}
	lookup := func(e Event) (cu.Event, error) { ev, err := g.event(e); return ev, wrap(err) }
	return withHandle(g, what, e, lookup, func(ev cu.Event) error { return wrap(f(ev)) })
}

// EventElapsed waits for end (cuEventSynchronize) and returns the GPU seconds from
// start to end (cuEventElapsedTime).
func (g *GPU) EventElapsed(start, end Event) (float64, error) {
	leave, err := g.enter("event time")
	if err != nil {
		return 0, err
	}
	defer leave()
	s, err := g.event(start)
	if err != nil {
		return 0, fmt.Errorf("cuda: event time: %w", err)
	}
	e, err := g.event(end)
	if err != nil {
		return 0, fmt.Errorf("cuda: event time: %w", err)
	}
	if err := e.Synchronize(); err != nil {
		return 0, fmt.Errorf("cuda: wait for event %d: %w", end, err)
	}
	ms, err := s.Elapsed(e)
	if err != nil {
		return 0, fmt.Errorf("cuda: time from event %d to %d: %w", start, end, err)
	}
	return ms / 1e3, nil
}

// DestroyEvent releases e (cuEventDestroy).
func (g *GPU) DestroyEvent(e Event) error {
	return g.onEvent("destroy event", e, func(ev cu.Event) error {
		if err := cu.DestroyEvent(&ev); err != nil {
			return err
		}
		g.events.mu.Lock()
		delete(g.events.ev, e)
		g.events.mu.Unlock()
		return nil
	})
}

var _ EventTimer = (*GPU)(nil)
