package statestore

import "time"

// Sessions is a typed view of a SessionStore: keys and values go through
// codecs.
//
// Errors of the codecs are wrapped with the store's name; errors of the store
// are returned as they are. Sessions is safe for concurrent use if the store
// and the codecs are.
type Sessions[K, V any] struct {
	store SessionStore
	c     codecs[K, V]
}

// NewSessions returns a typed view of s. The codecs get the store's name as
// their topic. A nil argument does not panic: every method of the view
// returns an error saying which argument was nil.
func NewSessions[K, V any](s SessionStore, k Codec[K], v Codec[V]) *Sessions[K, V] {
	return &Sessions[K, V]{store: s, c: newCodecs("Sessions", s, k, v)}
}

// Store returns the underlying byte store.
func (ss *Sessions[K, V]) Store() SessionStore { return ss.store }

// Put stores v for the session [start, end] of k. If the value codec encodes
// v as nil (a tombstone), Put removes the session.
func (ss *Sessions[K, V]) Put(k K, start, end time.Time, v V) error {
	kb, err := ss.c.encodeKey(k)
	if err != nil {
		return err
	}
	vb, err := ss.c.encodeValue(v)
	if err != nil {
		return err
	}
	return ss.store.Put(kb, start, end, vb)
}

// Remove deletes the session [start, end] of k.
func (ss *Sessions[K, V]) Remove(k K, start, end time.Time) error {
	kb, err := ss.c.encodeKey(k)
	if err != nil {
		return err
	}
	return ss.store.Remove(kb, start, end)
}

// FindSessions iterates the sessions of k that end at or after earliestEnd
// and start at or before latestStart, by start.
func (ss *Sessions[K, V]) FindSessions(k K, earliestEnd, latestStart time.Time) (*SessionsIterator[K, V], error) {
	kb, err := ss.c.encodeKey(k)
	if err != nil {
		return nil, err
	}
	it, err := ss.store.FindSessions(kb, earliestEnd, latestStart)
	if err != nil {
		return nil, err
	}
	return &SessionsIterator[K, V]{it: it, c: &ss.c}, nil
}

// ExpireBefore deletes every session that ends before cutoff.
func (ss *Sessions[K, V]) ExpireBefore(cutoff time.Time) error {
	if ss.c.err != nil {
		return ss.c.err
	}
	return ss.store.ExpireBefore(cutoff)
}

// SessionsIterator walks sessions of a Sessions view. Call Next before the
// first Key/Start/End/Value; after Next returns false, check Err. Always
// Close it. It is not safe for concurrent use.
type SessionsIterator[K, V any] struct {
	it         SessionIterator
	c          *codecs[K, V]
	key        K
	start, end time.Time
	value      V
	err        error
}

// Next decodes the next session. It returns false at the end or on the first
// error: a store error, or a codec error that ends the iteration.
func (it *SessionsIterator[K, V]) Next() bool {
	var zk K
	var zv V
	it.key, it.start, it.end, it.value = zk, time.Time{}, time.Time{}, zv
	if it.err != nil || !it.it.Next() {
		return false
	}
	k, v, err := it.c.decode(it.it.Key(), it.it.Value())
	if err != nil {
		it.err = err
		return false
	}
	it.key, it.start, it.end, it.value = k, it.it.Start(), it.it.End(), v
	return true
}

// Key returns the current key.
func (it *SessionsIterator[K, V]) Key() K { return it.key }

// Start returns the start of the current session.
func (it *SessionsIterator[K, V]) Start() time.Time { return it.start }

// End returns the end of the current session.
func (it *SessionsIterator[K, V]) End() time.Time { return it.end }

// Value returns the current value.
func (it *SessionsIterator[K, V]) Value() V { return it.value }

// Err returns the error that ended the iteration, if any.
func (it *SessionsIterator[K, V]) Err() error {
	if it.err != nil {
		return it.err
	}
	return it.it.Err()
}

// Close closes the underlying iterator.
func (it *SessionsIterator[K, V]) Close() error { return it.it.Close() }
