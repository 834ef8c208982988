package kafka

import (
	"sync"
	"sync/atomic"
)

// inflight bounds the records a producer has given its client and not
// yet seen complete: take waits while max are out, put returns one. Both
// are one atomic operation while there is room. A buffered channel of
// tokens did the same with a lock per record on each side, and the
// client's promise goroutine, which returns every token, contended for it
// with every sending task (5 % of an at-least-once stateless
// application's CPU).
//
// Invariant for the wake-up: a waiter counts itself in waiters and takes
// the room channel before it checks n again, and put lowers n before it
// reads waiters and closes room (under mu); so either the waiter sees the
// room put made, or put sees the waiter and closes the channel it holds
// (or a later one, but then its check comes after the put).
type inflight struct {
	n       atomic.Int64
	max     int64
	waiters atomic.Int32
	mu      sync.Mutex
	room    chan struct{} // closed, and replaced, by a put that finds waiters
}

func newInflight(max int) *inflight {
	return &inflight{max: int64(max), room: make(chan struct{})}
}

// take takes a place, waiting while there is none until done or stop is
// closed: then it returns done's cause (ctxErr) or stopped, and takes
// nothing.
func (f *inflight) take(done <-chan struct{}, ctxErr func() error, stop <-chan struct{}, stopped error) error {
	for {
		if f.tryTake() {
			return nil
		}
		f.waiters.Add(1)
		f.mu.Lock()
		room := f.room
		f.mu.Unlock()
		if f.tryTake() {
			f.waiters.Add(-1)
			return nil
		}
		var err error
		select {
		case <-room:
		case <-done:
			err = ctxErr()
		case <-stop:
			err = stopped
		}
		f.waiters.Add(-1)
		if err != nil {
			return err
		}
	}
}

// tryTake takes a place if one is free.
func (f *inflight) tryTake() bool {
	for {
		n := f.n.Load()
		if n >= f.max {
			return false
		}
		if f.n.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// put returns a place and wakes the waiters, if any.
func (f *inflight) put() {
	f.n.Add(-1)
	if f.waiters.Load() == 0 {
		return
	}
	f.mu.Lock()
	close(f.room)
	f.room = make(chan struct{})
	f.mu.Unlock()
}
