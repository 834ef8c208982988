package statestore

import "time"

// Windowed is a typed view of a WindowStore: keys and values go through
// codecs. Iteration follows the store: by encoded key, then window start.
//
// Errors of the codecs are wrapped with the store's name; errors of the store
// are returned as they are. Windowed is safe for concurrent use if the store
// and the codecs are.
type Windowed[K, V any] struct {
	store WindowStore
	c     codecs[K, V]
}

// NewWindowed returns a typed view of s. The codecs get the store's name as
// their topic. A nil argument does not panic: every method of the view
// returns an error saying which argument was nil.
func NewWindowed[K, V any](s WindowStore, k Codec[K], v Codec[V]) *Windowed[K, V] {
	return &Windowed[K, V]{store: s, c: newCodecs("Windowed", s, k, v)}
}

// Store returns the underlying byte store.
func (w *Windowed[K, V]) Store() WindowStore { return w.store }

// Put sets the value of k in the window that starts at start. If the value
// codec encodes v as nil (a tombstone), Put deletes the window.
func (w *Windowed[K, V]) Put(k K, start time.Time, v V) error {
	kb, err := w.c.encodeKey(k)
	if err != nil {
		return err
	}
	vb, err := w.c.encodeValue(v)
	if err != nil {
		return err
	}
	return w.store.Put(kb, start, vb)
}

// Delete removes the window of k that starts at start.
func (w *Windowed[K, V]) Delete(k K, start time.Time) error {
	kb, err := w.c.encodeKey(k)
	if err != nil {
		return err
	}
	return w.store.Put(kb, start, nil)
}

// Get returns the value of k in the window that starts at start.
func (w *Windowed[K, V]) Get(k K, start time.Time) (V, bool, error) {
	var zero V
	kb, err := w.c.encodeKey(k)
	if err != nil {
		return zero, false, err
	}
	vb, ok, err := w.store.Get(kb, start)
	if err != nil || !ok {
		return zero, false, err
	}
	v, err := w.c.decodeValue(vb)
	if err != nil {
		return zero, false, err
	}
	return v, true, nil
}

// Fetch iterates the windows of k whose start is in [from, to], by start.
func (w *Windowed[K, V]) Fetch(k K, from, to time.Time) (*WindowedIterator[K, V], error) {
	kb, err := w.c.encodeKey(k)
	if err != nil {
		return nil, err
	}
	return w.wrap(w.store.Fetch(kb, from, to))
}

// FetchAll iterates the windows of every key whose start is in [from, to],
// by encoded key, then start.
func (w *Windowed[K, V]) FetchAll(from, to time.Time) (*WindowedIterator[K, V], error) {
	if w.c.err != nil {
		return nil, w.c.err
	}
	return w.wrap(w.store.FetchAll(from, to))
}

// ExpireBefore deletes every window that starts before cutoff.
func (w *Windowed[K, V]) ExpireBefore(cutoff time.Time) error {
	if w.c.err != nil {
		return w.c.err
	}
	return w.store.ExpireBefore(cutoff)
}

func (w *Windowed[K, V]) wrap(it WindowIterator, err error) (*WindowedIterator[K, V], error) {
	if err != nil {
		return nil, err
	}
	return &WindowedIterator[K, V]{it: it, c: &w.c}, nil
}

// WindowedIterator walks the windows of a Windowed. Call Next before the
// first Key/Window/Value; after Next returns false, check Err. Always Close
// it. It is not safe for concurrent use.
type WindowedIterator[K, V any] struct {
	it    WindowIterator
	c     *codecs[K, V]
	key   K
	start time.Time
	value V
	err   error
}

// Next decodes the next window. It returns false at the end or on the first
// error: a store error, or a codec error that ends the iteration.
func (it *WindowedIterator[K, V]) Next() bool {
	var zk K
	var zv V
	it.key, it.start, it.value = zk, time.Time{}, zv
	if it.err != nil || !it.it.Next() {
		return false
	}
	k, v, err := it.c.decode(it.it.Key(), it.it.Value())
	if err != nil {
		it.err = err
		return false
	}
	it.key, it.start, it.value = k, it.it.Window(), v
	return true
}

// Key returns the current key.
func (it *WindowedIterator[K, V]) Key() K { return it.key }

// Window returns the start of the current window.
func (it *WindowedIterator[K, V]) Window() time.Time { return it.start }

// Value returns the current value.
func (it *WindowedIterator[K, V]) Value() V { return it.value }

// Err returns the error that ended the iteration, if any.
func (it *WindowedIterator[K, V]) Err() error {
	if it.err != nil {
		return it.err
	}
	return it.it.Err()
}

// Close closes the underlying iterator.
func (it *WindowedIterator[K, V]) Close() error { return it.it.Close() }
