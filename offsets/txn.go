package offsets

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"
)

// record is what the generic readers need of *Plan, *Commit and *Epoch.
type record[T any] interface {
	*T
	MarshalBinary() ([]byte, error)
	UnmarshalBinary([]byte) error
	number() int64
}

func (p *Plan) number() int64   { return p.Batch }
func (c *Commit) number() int64 { return c.Batch }
func (e *Epoch) number() int64  { return e.Epoch }

// decodeItem decodes the record in item, a key under prefix, into v, and
// checks that the record's number matches its key's.
func decodeItem[T any, P record[T]](prefix []byte, item *badger.Item, v P) error {
	n, err := keyNumber(prefix, item.Key())
	if err == nil {
		err = item.Value(v.UnmarshalBinary)
	}
	if err == nil && v.number() != n {
		err = fmt.Errorf("%w: record %d stored under number %d", ErrCorrupt, v.number(), n)
	}
	if err != nil {
		return fmt.Errorf("%w (key %q)", err, item.Key())
	}
	return nil
}

// get reads record n under prefix.
func get[T any, P record[T]](txn *badger.Txn, prefix []byte, n int64) (T, bool, error) {
	var v T
	item, err := txn.Get(recordKey(prefix, n))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return v, false, nil
	}
	if err != nil {
		return v, false, err
	}
	if err := decodeItem[T, P](prefix, item, &v); err != nil {
		return v, false, err
	}
	return v, true, nil
}

// last reads the record with the highest number under prefix.
func last[T any, P record[T]](txn *badger.Txn, prefix []byte) (T, bool, error) {
	var v T
	it := txn.NewIterator(badger.IteratorOptions{Reverse: true, Prefix: prefix})
	defer it.Close()
	it.Seek(seekLast(prefix))
	if !it.ValidForPrefix(prefix) {
		return v, false, nil
	}
	if err := decodeItem[T, P](prefix, it.Item(), &v); err != nil {
		return v, false, err
	}
	return v, true, nil
}

// storedAs reports whether record n under prefix is stored with the
// encoding val already, so that writing it again changes nothing. A
// different stored record (what names its kind) gives an error wrapping
// ErrConflict.
func storedAs[T any, P record[T]](txn *badger.Txn, prefix []byte, n int64, val []byte, what string) (bool, error) {
	old, found, err := get[T, P](txn, prefix, n)
	if err != nil || !found {
		return false, err
	}
	oldVal, err := P(&old).MarshalBinary()
	if err != nil {
		return false, err
	}
	if !bytes.Equal(oldVal, val) {
		return false, fmt.Errorf("%w: batch %d already has a different %s", ErrConflict, n, what)
	}
	return true, nil
}

// viewLast reads, in a read-only transaction, the record with the highest
// number under prefix.
func viewLast[T any, P record[T]](w *WAL, op string, prefix []byte) (v T, found bool, err error) {
	err = w.viewTxn(op, func(txn *badger.Txn) (err error) {
		v, found, err = last[T, P](txn, prefix)
		return err
	})
	return v, found, err
}

// scan calls fn, in number order, for every record under prefix numbered
// from on, each turned into an entry by entry (which may read more within
// txn). It reads the log in pages, each page in its own read-only
// transaction, and calls fn outside them, so fn may call the WAL; writes
// made meanwhile may or may not be seen. It stops at the first error from
// fn or ctx and returns it.
func scan[T any, P record[T], E any](ctx context.Context, w *WAL, op string, prefix []byte, from int64,
	entry func(txn *badger.Txn, v T) (E, error), fn func(E) error) error {
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("offsets: %s: %w", op, err)
		}
		var page []E
		last := int64(-1)
		err := w.viewTxn(op, func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
			defer it.Close()
			for it.Seek(recordKey(prefix, from)); it.ValidForPrefix(prefix) && len(page) < pageSize; it.Next() {
				var v T
				if err := decodeItem[T, P](prefix, it.Item(), &v); err != nil {
					return err
				}
				e, err := entry(txn, v)
				if err != nil {
					return err
				}
				page = append(page, e)
				last = P(&v).number()
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, e := range page {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("offsets: %s: %w", op, err)
			}
			if err := fn(e); err != nil {
				return err
			}
		}
		if len(page) < pageSize || last == math.MaxInt64 {
			return nil
		}
		from = last + 1
	}
}

// exists reports whether key is stored.
func exists(txn *badger.Txn, key []byte) (bool, error) {
	_, err := txn.Get(key)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, badger.ErrKeyNotFound):
		return false, nil
	}
	return false, err
}

// keepFrom returns the number of the keep-th newest record under prefix,
// and whether there are that many. It scans keep keys, newest first;
// retention deletes oldest first, so no tombstones lie among them.
func keepFrom(txn *badger.Txn, prefix []byte, keep int) (int64, bool, error) {
	it := txn.NewIterator(badger.IteratorOptions{Reverse: true, Prefix: prefix})
	defer it.Close()
	seen := 0
	for it.Seek(seekLast(prefix)); it.ValidForPrefix(prefix); it.Next() {
		seen++
		if seen == keep {
			n, err := keyNumber(prefix, it.Item().Key())
			return n, err == nil, err
		}
	}
	return 0, false, nil
}

// deleteBefore deletes up to budget records under prefix numbered from
// from (a lower bound of the live records) to before, oldest first,
// skipping those for which keep returns true (keep may be nil). It returns
// how many it deleted and a new lower bound of the live records: the first
// record it left, or before.
//
// Starting at from matters: deleted keys stay in Badger as tombstones
// until compaction drops them, and an iterator steps over them one by one,
// so scanning from the start of the prefix would cost more at every write.
func deleteBefore(txn *badger.Txn, prefix []byte, from, before int64, budget int, keep func(int64) (bool, error)) (int, int64, error) {
	if from >= before {
		return 0, from, nil
	}
	var doomed [][]byte
	low := before
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
	for it.Seek(recordKey(prefix, from)); it.ValidForPrefix(prefix); it.Next() {
		k := it.Item().Key()
		n, err := keyNumber(prefix, k)
		if err != nil {
			it.Close()
			return 0, from, err
		}
		if n >= before {
			break
		}
		if len(doomed) == budget {
			low = min(low, n)
			break
		}
		if keep != nil {
			kept, err := keep(n)
			if err != nil {
				it.Close()
				return 0, from, err
			}
			if kept {
				low = min(low, n)
				continue
			}
		}
		doomed = append(doomed, it.Item().KeyCopy(nil))
	}
	it.Close()
	for _, k := range doomed {
		if err := txn.Delete(k); err != nil {
			return 0, from, err
		}
	}
	return len(doomed), low, nil
}

// lowMark is a lower bound of the live record numbers of one log in a
// namespace: every record below it has been deleted, and none is written
// there again (plans and epochs only grow, and a commit needs its plan).
// Scans start at it to skip retention's tombstones. It starts at zero and
// only rises.
type lowMark struct{ v atomic.Int64 }

func (m *lowMark) load() int64 { return m.v.Load() }

// raise sets the mark to n if n is higher.
func (m *lowMark) raise(n int64) {
	for {
		old := m.v.Load()
		if n <= old || m.v.CompareAndSwap(old, n) {
			return
		}
	}
}
