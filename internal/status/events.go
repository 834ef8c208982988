package status

import (
	"sync"
	"time"
)

// Event is something the page lists under "last errors and rebalances".
type Event struct {
	// Time is milliseconds since the Unix epoch.
	Time int64 `json:"t"`
	// Kind is "state" (the App changed state; Text names it and its
	// error), "rebalance" (an assignment arrived) or "error".
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// Events keeps the last events, oldest first. It is safe for concurrent
// use; the zero value keeps none.
type Events struct {
	mu   sync.Mutex
	keep int
	list []Event
}

// NewEvents returns an Events that keeps the last keep events.
func NewEvents(keep int) *Events { return &Events{keep: keep} }

// Add records an event at t.
func (e *Events) Add(t time.Time, kind, text string) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.keep <= 0 {
		return
	}
	if len(e.list) == e.keep {
		e.list = append(e.list[:0], e.list[1:]...)
	}
	e.list = append(e.list, Event{Time: t.UnixMilli(), Kind: kind, Text: text})
}

// List returns a copy of the events, oldest first.
func (e *Events) List() []Event {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Event(nil), e.list...)
}
