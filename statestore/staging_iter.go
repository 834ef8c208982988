package statestore

import (
	"sync/atomic"
	"time"
)

// mergedIter walks the staged writes of an overlay and its base's entries
// together, in the store's order. A staged entry wins over the base's entry
// with the same identity (cmp == 0), and a staged delete hides it.
//
// One type serves the three kinds: it implements Iterator, WindowIterator
// and SessionIterator. The overlay side reads a snapshot of the staged tree;
// the base side is the base's own iterator, which reads a snapshot too. It
// is not safe for concurrent use.
type mergedIter struct {
	closed *atomic.Bool // the overlay's
	cmp    func(a, b entry) int

	// overs are the overlay's layers, newest first: the staging layer's
	// writes, then each frozen layer's (see Freeze). An entry of a newer
	// layer wins over an older layer's and the base's entry with the same
	// identity; nil once the iterator is released.
	overs []overSource
	// base returns the next base entry in range; nil if there is none.
	base      func() (entry, bool, error)
	baseClose func() error

	started  bool
	baseOK   bool
	baseHead entry

	item  entry
	valid bool
	done  bool
	err   error
	// baseErr is the base's failure, reported by the Next after the one
	// that read ahead into it, so the entry before it is still yielded.
	baseErr error
}

// overSource is one layer's side of a merge: its staged items in range,
// deletes included, and the head read ahead.
type overSource struct {
	next  func() (entry, bool)
	close func()
	head  entry
	ok    bool
}

var (
	_ Iterator        = (*mergedIter)(nil)
	_ WindowIterator  = (*mergedIter)(nil)
	_ SessionIterator = (*mergedIter)(nil)
)

// Next advances to the next entry. It returns false at the end, after
// Close, once the overlay is closed (then Err returns ErrClosed), or when
// the base's iterator fails (then Err returns its error).
func (m *mergedIter) Next() bool {
	m.item, m.valid = entry{}, false
	if m.done {
		return false
	}
	if m.overs == nil || m.closed.Load() {
		m.finish(ErrClosed)
		return false
	}
	if !m.started {
		m.started = true
		for i := range m.overs {
			m.advanceOver(i)
		}
		m.advanceBase()
	}
	if m.baseErr != nil {
		m.finish(m.baseErr)
		return false
	}
	for {
		// The smallest head of the layers; the newest layer's on a tie.
		best := -1
		for i := range m.overs {
			if m.overs[i].ok && (best < 0 || m.cmp(m.overs[i].head, m.overs[best].head) < 0) {
				best = i
			}
		}
		c := 0
		switch {
		case best < 0 && !m.baseOK:
			m.finish(nil)
			return false
		case best < 0:
			c = 1
		case m.baseOK:
			c = m.cmp(m.overs[best].head, m.baseHead)
		default:
			c = -1
		}
		if c > 0 {
			item := m.baseHead
			m.advanceBase()
			m.item, m.valid = item, true
			return true
		}
		item := m.overs[best].head
		for i := best; i < len(m.overs); i++ { // older layers' entries of the same identity are hidden
			if m.overs[i].ok && (i == best || m.cmp(m.overs[i].head, item) == 0) {
				m.advanceOver(i)
			}
		}
		if c == 0 {
			m.advanceBase()
		}
		if m.baseErr != nil {
			m.finish(m.baseErr)
			return false
		}
		if !item.del {
			m.item, m.valid = item, true
			return true
		}
	}
}

func (m *mergedIter) advanceOver(i int) {
	o := &m.overs[i]
	o.head, o.ok = o.next()
}

// advanceBase reads the base's next entry; a failure ends the base side
// and is kept in baseErr.
func (m *mergedIter) advanceBase() {
	if m.base == nil || m.baseErr != nil {
		m.baseOK = false
		return
	}
	m.baseHead, m.baseOK, m.baseErr = m.base()
	if m.baseErr != nil {
		m.baseOK = false
	}
}

// finish ends the iteration with err and releases both sides.
func (m *mergedIter) finish(err error) {
	m.done, m.err = true, err
	if cerr := m.release(); m.err == nil {
		m.err = cerr
	}
}

func (m *mergedIter) release() error {
	m.baseOK = false
	for _, o := range m.overs {
		o.close()
	}
	m.overs = nil
	var err error
	if m.baseClose != nil {
		err = m.baseClose()
		m.baseClose, m.base = nil, nil
	}
	return err
}

// Key returns a copy of the current key, or nil when not positioned on one.
func (m *mergedIter) Key() []byte {
	if !m.valid {
		return nil
	}
	return cloneNonNil(m.item.key)
}

// Value returns a copy of the current value, or nil when not positioned on
// one.
func (m *mergedIter) Value() []byte {
	if !m.valid {
		return nil
	}
	return cloneNonNil(m.item.value)
}

// Window returns the start of the current window (window stores).
func (m *mergedIter) Window() time.Time { return m.Start() }

// Start returns the start of the current window or session.
func (m *mergedIter) Start() time.Time {
	if !m.valid {
		return time.Time{}
	}
	return time.UnixMilli(m.item.start)
}

// End returns the end of the current session (session stores).
func (m *mergedIter) End() time.Time {
	if !m.valid {
		return time.Time{}
	}
	return time.UnixMilli(m.item.end)
}

// Err returns the error that ended the iteration, if any.
func (m *mergedIter) Err() error { return m.err }

// Close releases both sides. It is idempotent; Next after Close returns
// false and Err then returns ErrClosed, unless the iteration had ended.
func (m *mergedIter) Close() error {
	m.item, m.valid = entry{}, false
	return m.release()
}

// treeSource returns an overlay source over a snapshot of the staged
// entries: a cursor, positioned by seek when non-nil, whose items go through
// step. step returns the item to yield, or skip to read on, or stop to end;
// it may reposition the cursor.
func treeSource(staged *indexed, seek *entry,
	step func(cur *btreeCursor[entry], item entry) (skip, stop bool),
) (func() (entry, bool), func()) {
	cur := staged.cursor()
	if seek != nil {
		cur.Seek(*seek)
	}
	next := func() (entry, bool) {
		for {
			item, ok := cur.Next()
			if !ok {
				return entry{}, false
			}
			skip, stop := step(cur, item)
			if stop {
				return entry{}, false
			}
			if !skip {
				return item, true
			}
		}
	}
	return next, cur.Close
}

// baseKV adapts a base Iterator to a merge source.
func baseKV(it Iterator) (func() (entry, bool, error), func() error) {
	return func() (entry, bool, error) {
		if !it.Next() {
			return entry{}, false, it.Err()
		}
		return entry{key: it.Key(), value: it.Value()}, true, nil
	}, it.Close
}

// baseWindows adapts a base WindowIterator to a merge source.
func baseWindows(it WindowIterator) (func() (entry, bool, error), func() error) {
	return func() (entry, bool, error) {
		if !it.Next() {
			return entry{}, false, it.Err()
		}
		return entry{key: it.Key(), start: it.Window().UnixMilli(), value: it.Value()}, true, nil
	}, it.Close
}

// baseSessions adapts a base SessionIterator to a merge source.
func baseSessions(it SessionIterator) (func() (entry, bool, error), func() error) {
	return func() (entry, bool, error) {
		if !it.Next() {
			return entry{}, false, it.Err()
		}
		return entry{key: it.Key(), start: it.Start().UnixMilli(), end: it.End().UnixMilli(), value: it.Value()}, true, nil
	}, it.Close
}
