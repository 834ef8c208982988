package badgerstore

import (
	"bytes"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/weirstream/weir/internal/statedir"
	"github.com/weirstream/weir/statestore"
)

// cursor is what every store iterator is built on: a Badger iterator in its
// own read transaction — the snapshot the store's iterators promise — over
// the keys in [lower, upper) of one store partition.
//
// A cursor is registered with its DB while it holds Badger resources, so
// DB.Close can release them; every move happens under the DB's read lock,
// so Close never releases a cursor in the middle of one. It is not safe for
// concurrent use.
type cursor struct {
	store        *storeBase
	lower, upper []byte // upper nil: to the end of the iterator's prefix
	txn          *badger.Txn
	it           *badger.Iterator
	started      bool
	released     bool // Badger resources gone: by Close, the end, or DB.Close
	done         bool
	err          error
}

// openCursor opens a cursor over the rows of s with the given prefix (the
// data or index rows) in [lower, upper).
func (s *storeBase) openCursor(prefix, lower, upper []byte) (*cursor, error) {
	if s.closed.Load() {
		return nil, statestore.ErrClosed
	}
	db := s.db
	if err := db.acquire(); err != nil {
		return nil, statestore.ErrClosed
	}
	defer db.release()
	if s.closed.Load() {
		return nil, statestore.ErrClosed
	}
	c := &cursor{store: s, lower: lower, upper: upper}
	c.txn = db.bdb.NewTransaction(false)
	c.it = c.txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
	db.itersMu.Lock()
	db.iters[c] = struct{}{}
	db.itersMu.Unlock()
	return c, nil
}

// step runs one Next of an iterator: fn moves the cursor and reports
// whether it yields an entry. The iteration ends, and releases the cursor,
// when fn reports no entry or an error, or when the store or the DB is
// closed (with statestore.ErrClosed).
func (c *cursor) step(fn func() (bool, error)) bool {
	if c.done {
		return false
	}
	db := c.store.db
	db.mu.RLock()
	defer db.mu.RUnlock()
	if c.released || db.closed || c.store.closed.Load() {
		c.end(statestore.ErrClosed)
		return false
	}
	// A panic inside Badger (a damaged table) is an error, and marks the
	// directory damaged (DB.checkDamage).
	ok, err := statedir.Protect(fn)
	db.checkDamage(err)
	if err != nil {
		err = fmt.Errorf("badgerstore: store %q partition %d: %w", c.store.name, c.store.partition, err)
	}
	if !ok || err != nil {
		c.end(err)
		return false
	}
	return true
}

// end finishes the iteration. The caller holds the DB's read lock.
func (c *cursor) end(err error) {
	c.done, c.err = true, err
	c.unregister()
}

// unregister releases the Badger resources and forgets the cursor. The
// caller holds the DB's read lock.
func (c *cursor) unregister() {
	if c.released {
		return
	}
	c.releaseLocked()
	db := c.store.db
	db.itersMu.Lock()
	delete(db.iters, c)
	db.itersMu.Unlock()
}

// releaseLocked closes the Badger iterator and transaction. The caller
// holds the DB's lock (read or write) and forgets the cursor itself.
func (c *cursor) releaseLocked() {
	if c.released {
		return
	}
	c.released = true
	c.it.Close()
	c.txn.Discard()
}

// close releases the cursor; Next after it ends with statestore.ErrClosed
// unless the iteration had ended.
func (c *cursor) close() error {
	db := c.store.db
	db.mu.RLock()
	defer db.mu.RUnlock()
	c.unregister()
	return nil
}

// advance moves to the first row at or after lower, then to the next row,
// and returns the current key (valid until the next move).
func (c *cursor) advance() ([]byte, bool) {
	if !c.started {
		c.started = true
		c.it.Seek(c.lower)
	} else {
		c.it.Next()
	}
	return c.current()
}

// seek moves to the first row at or after k and returns its key.
func (c *cursor) seek(k []byte) ([]byte, bool) {
	c.it.Seek(k)
	return c.current()
}

// current returns the current key if the cursor is on a row below upper.
func (c *cursor) current() ([]byte, bool) {
	if !c.it.Valid() {
		return nil, false
	}
	k := c.it.Item().Key()
	if c.upper != nil && bytes.Compare(k, c.upper) >= 0 {
		return nil, false
	}
	return k, true
}

// value returns a copy of the current row's value, never nil.
func (c *cursor) value() ([]byte, error) {
	v, err := c.it.Item().ValueCopy(nil)
	if err != nil {
		return nil, err
	}
	if v == nil {
		v = []byte{}
	}
	return v, nil
}

// iterState is what the store iterators share: the cursor and the current
// entry's copies.
type iterState struct {
	c          *cursor
	valid      bool
	key, value []byte
	start, end int64 // window start; session start and end (Unix ms)
}

// reset clears the current entry before a move.
func (s *iterState) reset() {
	s.valid, s.key, s.value, s.start, s.end = false, nil, nil, 0, 0
}

// yield makes the current row the entry: key (copied), times, and the
// row's value.
func (s *iterState) yield(key []byte, start, end int64) (bool, error) {
	v, err := s.c.value()
	if err != nil {
		return false, err
	}
	s.valid, s.key, s.value, s.start, s.end = true, key, v, start, end
	return true, nil
}

// Key returns a copy of the current key, or nil when not positioned on one.
func (s *iterState) Key() []byte { return s.key }

// Value returns a copy of the current value, or nil when not positioned on
// one.
func (s *iterState) Value() []byte { return s.value }

// Err returns the error that ended the iteration, or nil at its end.
func (s *iterState) Err() error { return s.c.err }

// Close releases the iterator's snapshot. It is idempotent; Next after
// Close returns false and Err then returns statestore.ErrClosed, unless the
// iteration had ended.
func (s *iterState) Close() error {
	s.reset()
	return s.c.close()
}
