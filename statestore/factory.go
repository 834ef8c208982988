package statestore

import (
	"fmt"
	"sync"
)

// memFactory is the in-memory Factory.
type memFactory struct {
	mu     sync.Mutex
	stores map[storeID]openStore
}

// storeID names one store of one task.
type storeID struct {
	name      string
	partition int32
}

// openStore is a store the factory handed out, with the kind it was opened as.
type openStore struct {
	kind  Kind
	store Store
}

var _ Factory = (*memFactory)(nil)

// NewInMemoryFactory returns a Factory of in-memory stores, for the test
// driver and for tests.
//
// Open returns a new empty store per (spec.Name, partition), and the same
// store when the pair is opened again, so a task that reopens its stores sees
// its state. A store that was closed is replaced by a new, empty one on the
// next Open. The factory is safe for concurrent use.
func NewInMemoryFactory() Factory {
	return &memFactory{stores: make(map[storeID]openStore)}
}

// Open returns the store for spec in partition: a KeyValueStore, WindowStore
// or SessionStore as spec.Kind says. It is an error to give an empty name or
// an unknown kind, or to open a name again with another kind.
func (f *memFactory) Open(spec Spec, partition int32) (Store, error) {
	if spec.Name == "" {
		return nil, fmt.Errorf("statestore: open store in partition %d: empty name", partition)
	}
	id := storeID{name: spec.Name, partition: partition}

	f.mu.Lock()
	defer f.mu.Unlock()
	if open, ok := f.stores[id]; ok && !isClosed(open.store) {
		if open.kind != spec.Kind {
			return nil, fmt.Errorf("statestore: open store %q in partition %d as %s: already open as %s",
				spec.Name, partition, spec.Kind, open.kind)
		}
		return open.store, nil
	}
	var s Store
	switch spec.Kind {
	case KindKeyValue:
		s = NewInMemoryKeyValue(spec.Name)
	case KindWindow:
		s = NewInMemoryWindow(spec.Name)
	case KindSession:
		s = NewInMemorySession(spec.Name)
	default:
		return nil, fmt.Errorf("statestore: open store %q in partition %d: unknown kind %d", spec.Name, partition, int(spec.Kind))
	}
	f.stores[id] = openStore{kind: spec.Kind, store: s}
	return s, nil
}

// isClosed reports whether an in-memory store has been closed.
func isClosed(s Store) bool {
	switch s := s.(type) {
	case *memKeyValue:
		return s.closed.Load()
	case *memWindow:
		return s.closed.Load()
	case *memSession:
		return s.closed.Load()
	}
	return false
}
