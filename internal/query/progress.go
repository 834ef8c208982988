package query

import "sync"

// Ring keeps the last N progress reports for /progress. It is safe for
// concurrent use.
type Ring struct {
	mu   sync.Mutex
	buf  []any
	next int
	full bool
}

// NewRing returns a ring of n reports (at least 1).
func NewRing(n int) *Ring { return &Ring{buf: make([]any, max(n, 1))} }

// Add records a report, dropping the oldest when full.
func (r *Ring) Add(p any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf[r.next] = p
	r.next = (r.next + 1) % len(r.buf)
	if r.next == 0 {
		r.full = true
	}
}

// Snapshot returns the reports, oldest first.
func (r *Ring) Snapshot() any {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []any{}
	if r.full {
		out = append(out, r.buf[r.next:]...)
	}
	return append(out, r.buf[:r.next]...)
}
