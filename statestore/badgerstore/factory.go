package badgerstore

import (
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/weirstream/weir/statestore"
)

// storeID names one store partition.
type storeID struct {
	name      string
	partition int32
}

// openStore is a handle Factory.Open gave out.
type openStore struct {
	store statestore.Store
	base  *storeBase
}

// factory is the statestore.Factory of a DB.
type factory struct{ db *DB }

var _ statestore.Factory = factory{}

// Factory returns a statestore.Factory whose stores live in db: Open(spec,
// partition) returns a KeyValueStore, WindowStore or SessionStore, as
// spec.Kind says, over the rows of (spec.Name, partition).
//
// The stores meet the contracts of statestore: they copy what they are given
// and what they return, a nil value deletes, iterators read a snapshot (a
// Badger read transaction) taken when they are opened, and every operation
// after Close returns statestore.ErrClosed. They differ from the in-memory
// stores where persistence makes them: Close releases a handle but keeps the
// rows, so reopening the store — in this process or after a restart — finds
// its state; keys are limited to about 64 KB by Badger; Retention in the Spec
// is not enforced here (operators call ExpireBefore).
//
// Open returns the open handle of (spec.Name, partition) if there is one,
// and a new handle otherwise. The kind of each store partition is recorded
// in the database: opening it as another kind is an error, as are an empty
// name or one holding a 0x00 byte, and an unknown kind.
func (db *DB) Factory() statestore.Factory { return factory{db} }

// Open returns the store of spec in partition; see DB.Factory.
func (f factory) Open(spec statestore.Spec, partition int32) (statestore.Store, error) {
	db := f.db
	fail := func(err error) (statestore.Store, error) {
		return nil, fmt.Errorf("badgerstore: open %s store %q in partition %d: %w", spec.Kind, spec.Name, partition, err)
	}
	if err := db.acquireFor(spec); err != nil {
		return fail(err)
	}
	defer db.release()

	db.storesMu.Lock()
	defer db.storesMu.Unlock()
	id := storeID{spec.Name, partition}
	if open, ok := db.stores[id]; ok && !open.base.closed.Load() {
		if open.base.kind != spec.Kind {
			return fail(fmt.Errorf("%w: already open as a %s store", ErrInvalid, open.base.kind))
		}
		return open.store, nil
	}
	if err := db.markKind(spec.Name, partition, spec.Kind); err != nil {
		return fail(err)
	}
	s := newStore(db, spec, partition)
	db.stores[id] = openStore{store: s, base: baseOf(s)}
	return s, nil
}

// Reader returns a read-only handle on the committed rows of a store
// partition, for interactive queries and offline lookups: it is not shared
// with Factory's handles, so closing it closes nothing else, and its
// writes fail with ErrReadOnly. A store partition the database holds as
// another kind is an error; one it does not hold reads as empty.
func (db *DB) Reader(spec statestore.Spec, partition int32) (statestore.Store, error) {
	fail := func(err error) (statestore.Store, error) {
		return nil, fmt.Errorf("badgerstore: read %s store %q in partition %d: %w", spec.Kind, spec.Name, partition, err)
	}
	if err := db.acquireFor(spec); err != nil {
		return fail(err)
	}
	defer db.release()
	recorded, ok, err := db.kindOf(metaKey(metaKind, spec.Name, partition))
	if err != nil {
		return fail(err)
	}
	if ok && recorded != spec.Kind {
		return fail(fmt.Errorf("%w: the database holds it as a %s store", ErrInvalid, recorded))
	}
	s := newStore(db, spec, partition)
	baseOf(s).reader = true
	return s, nil
}

// acquireFor validates spec and read-holds the database (see acquire).
func (db *DB) acquireFor(spec statestore.Spec) error {
	if err := validateName(spec.Name); err != nil {
		return err
	}
	if spec.Kind < statestore.KindKeyValue || spec.Kind > statestore.KindSession {
		return fmt.Errorf("%w: unknown kind %d", ErrInvalid, int(spec.Kind))
	}
	return db.acquire()
}

// newStore returns a handle of the kind of spec.
func newStore(db *DB, spec statestore.Spec, partition int32) statestore.Store {
	prefix := partitionPrefix(spec.Name, partition)
	base := &storeBase{
		db:        db,
		name:      spec.Name,
		partition: partition,
		kind:      spec.Kind,
		data:      withTag(prefix, tagData),
		index:     withTag(prefix, tagIndex),
	}
	switch spec.Kind {
	case statestore.KindKeyValue:
		return &kvStore{base}
	case statestore.KindWindow:
		return &windowStore{base}
	default:
		return &sessionStore{base}
	}
}

// baseOf returns the storeBase of a handle newStore made.
func baseOf(s statestore.Store) *storeBase {
	switch s := s.(type) {
	case *kvStore:
		return s.storeBase
	case *windowStore:
		return s.storeBase
	case *sessionStore:
		return s.storeBase
	}
	return nil
}

// markKind records the kind of a store partition, or checks it against the
// recorded one. The caller holds the database's read lock.
func (db *DB) markKind(name string, partition int32, kind statestore.Kind) error {
	key := metaKey(metaKind, name, partition)
	recorded, ok, err := db.kindOf(key)
	if err != nil {
		return err
	}
	if ok {
		if recorded != kind {
			return fmt.Errorf("%w: the database holds it as a %s store", ErrInvalid, recorded)
		}
		return nil
	}
	if db.readOnly {
		return nil
	}
	return db.write([]op{{key: key, value: []byte{byte(kind)}}})
}

// kindOf reads a kind record. The caller holds the database's read lock.
func (db *DB) kindOf(key []byte) (statestore.Kind, bool, error) {
	var kind statestore.Kind
	err := db.bdb.View(func(txn *badger.Txn) error {
		item, err := txn.Get(key)
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			if len(v) != 1 || statestore.Kind(v[0]) < statestore.KindKeyValue || statestore.Kind(v[0]) > statestore.KindSession {
				return fmt.Errorf("%w: kind record %q = %v", ErrCorrupt, key, v)
			}
			kind = statestore.Kind(v[0])
			return nil
		})
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return 0, false, nil
	}
	return kind, err == nil, err
}
