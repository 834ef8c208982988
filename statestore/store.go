// Package statestore defines weir's state store interfaces and an in-memory
// implementation.
//
// Stores work on bytes: keys and values are []byte, ordered by bytes.Compare.
// Typed views (KV, Windowed, Sessions) put serdes on top, so one store engine
// (in memory here, Badger in statestore/badgerstore) serves every operator.
//
//	kv := statestore.NewInMemoryKeyValue("counts")
//	counts := statestore.NewKV[string, int64](kv, serde.String(), serde.Int64())
//	_ = counts.Put("hello", 1)
//	n, ok, _ := counts.Get("hello")
//
// Stores keep times at millisecond precision, as Kafka timestamps are: a
// time.Time argument is truncated with UnixMilli, and times come back as
// time.UnixMilli values. EncodeWindowKey and EncodeSessionKey give the byte
// layout of windowed and session keys in changelogs.
//
// A VersionedStore (NewVersioned, typed view Versions) keeps each key's
// values over time within a history retention, over a KeyValueStore.
//
// This package imports no I/O library and never reads the wall clock: time
// comes in as arguments (stream time), so stores behave the same in the test
// driver and in the engines.
package statestore

import (
	"time"
)

// Kind says which interface a store implements.
type Kind int

const (
	// KindKeyValue stores implement KeyValueStore.
	KindKeyValue Kind = iota + 1
	// KindWindow stores implement WindowStore.
	KindWindow
	// KindSession stores implement SessionStore.
	KindSession
)

// String returns the kind's name as Describe prints it.
func (k Kind) String() string {
	switch k {
	case KindKeyValue:
		return "key-value"
	case KindWindow:
		return "window"
	case KindSession:
		return "session"
	}
	return "unknown"
}

// Spec describes a store a topology needs. Engines open one store per Spec
// and per task (partition).
type Spec struct {
	// Name is unique within a topology; it names the changelog topic too.
	Name string
	// Kind selects the interface the store implements.
	Kind Kind
	// Retention is how long window and session stores keep a window after
	// its end, measured in stream time. Zero means forever.
	Retention time.Duration
	// Logged says whether writes go to a changelog topic.
	Logged bool
}

// Store is what every store implements.
type Store interface {
	// Name returns the store's name.
	Name() string
	// Close releases the store. Operations after Close return ErrClosed;
	// closing a closed store returns nil.
	Close() error
}

// Iterator walks key-value pairs in key order. Call Next before the first
// Key/Value; after Next returns false, check Err. Always Close it.
//
// An iterator reads the store as it was when the iterator was opened: the
// store may be written while an iterator is open, even by the goroutine that
// iterates, and the iterator does not see those writes. Key and Value return
// copies the caller owns. The same holds for WindowIterator and
// SessionIterator.
type Iterator interface {
	// Next advances to the next pair and reports whether there is one.
	Next() bool
	// Key returns the current key.
	Key() []byte
	// Value returns the current value.
	Value() []byte
	// Err returns the error that ended the iteration, or nil at its end.
	Err() error
	// Close releases the iterator.
	Close() error
}

// KeyValueStore is an ordered map from bytes to bytes.
type KeyValueStore interface {
	Store
	// Get returns the value of key and whether it exists.
	Get(key []byte) (value []byte, ok bool, err error)
	// Put sets key to value. A nil value deletes the key.
	Put(key, value []byte) error
	// Delete removes key; deleting a missing key is not an error.
	Delete(key []byte) error
	// Range iterates keys in [from, to); nil bounds are open.
	Range(from, to []byte) (Iterator, error)
	// PrefixScan iterates the keys that start with prefix.
	PrefixScan(prefix []byte) (Iterator, error)
	// ApproximateNumEntries returns an estimate of the number of keys.
	ApproximateNumEntries() (int64, error)
}

// WindowIterator walks windowed entries ordered by key, then window start.
type WindowIterator interface {
	// Next advances to the next entry and reports whether there is one.
	Next() bool
	// Key returns the current key.
	Key() []byte
	// Window is the start of the entry's window.
	Window() time.Time
	// Value returns the current value.
	Value() []byte
	// Err returns the error that ended the iteration, or nil at its end.
	Err() error
	// Close releases the iterator.
	Close() error
}

// WindowStore maps (key, window start) to a value. Windows of one store have
// one size, known to the operator, so only starts are stored.
type WindowStore interface {
	Store
	// Put sets the value of key in the window that starts at start. A nil
	// value deletes it.
	Put(key []byte, start time.Time, value []byte) error
	// Get returns the value of key in the window that starts at start.
	Get(key []byte, start time.Time) (value []byte, ok bool, err error)
	// Fetch iterates the windows of key whose start is in [from, to],
	// ordered by start.
	Fetch(key []byte, from, to time.Time) (WindowIterator, error)
	// FetchAll iterates the windows of every key whose start is in
	// [from, to], ordered by key, then start.
	FetchAll(from, to time.Time) (WindowIterator, error)
	// ExpireBefore deletes every window that starts before cutoff.
	ExpireBefore(cutoff time.Time) error
}

// SessionIterator walks sessions ordered by key, then session start.
type SessionIterator interface {
	// Next advances to the next session and reports whether there is one.
	Next() bool
	// Key returns the current key.
	Key() []byte
	// Start returns the start of the current session.
	Start() time.Time
	// End returns the end of the current session.
	End() time.Time
	// Value returns the current value.
	Value() []byte
	// Err returns the error that ended the iteration, or nil at its end.
	Err() error
	// Close releases the iterator.
	Close() error
}

// SessionStore holds session windows: (key, start, end) → value.
type SessionStore interface {
	Store
	// Put stores the session [start, end] of key. A nil value deletes it. A
	// session that ends before it starts is an error wrapping
	// ErrInvalidSession.
	Put(key []byte, start, end time.Time, value []byte) error
	// Remove deletes the session [start, end] of key; removing a missing
	// session is not an error.
	Remove(key []byte, start, end time.Time) error
	// FindSessions iterates the sessions of key that end at or after
	// earliestEnd and start at or before latestStart, ordered by start — the
	// sessions a record at time t may merge with, for earliestEnd = t-gap,
	// latestStart = t+gap.
	FindSessions(key []byte, earliestEnd, latestStart time.Time) (SessionIterator, error)
	// ExpireBefore deletes every session that ends before cutoff.
	ExpireBefore(cutoff time.Time) error
}

// Factory opens the stores of a task. Engines pass one to the task; the
// in-memory factory serves the test driver.
type Factory interface {
	// Open returns the store for spec in the given partition (task). The
	// returned value implements the interface named by spec.Kind.
	Open(spec Spec, partition int32) (Store, error)
}
