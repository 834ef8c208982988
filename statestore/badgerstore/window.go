package badgerstore

import (
	"bytes"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/weirstream/weir/statestore"
)

// expireChunk is how many rows ExpireBefore deletes per write.
const expireChunk = 4096

// windowStore is the Badger WindowStore: a data row
// <prefix> 'd' esc(key) time(start) → value and an index row
// <prefix> 'x' time(start) esc(key) per window (see the layout in
// layout.go).
type windowStore struct{ *storeBase }

var (
	_ statestore.WindowStore   = (*windowStore)(nil)
	_ statestore.ExpiryScanner = (*windowStore)(nil)
)

// Put sets the value of key in the window starting at start; a nil value
// deletes it.
func (s *windowStore) Put(key []byte, start time.Time, value []byte) error {
	ms := start.UnixMilli()
	data, index := windowBody(s.data, key, ms), windowIndexBody(s.index, key, ms)
	if value == nil {
		return s.write(op{key: data, del: true}, op{key: index, del: true})
	}
	return s.write(op{key: data, value: value}, op{key: index, value: []byte{}})
}

// Get returns a copy of the value of key in the window starting at start.
func (s *windowStore) Get(key []byte, start time.Time) ([]byte, bool, error) {
	return s.get(windowBody(s.data, key, start.UnixMilli()))
}

// Fetch iterates the windows of key whose start is in [from, to], ordered
// by start, over a snapshot: one range scan.
func (s *windowStore) Fetch(key []byte, from, to time.Time) (statestore.WindowIterator, error) {
	lower := windowBody(s.data, key, from.UnixMilli())
	upper := append(windowBody(s.data, key, to.UnixMilli()), 0)
	c, err := s.openCursor(s.data, lower, upper)
	if err != nil {
		return nil, err
	}
	return &windowIterator{iterState: iterState{c: c}}, nil
}

// FetchAll iterates the windows of every key whose start is in [from, to],
// ordered by key, then start, over a snapshot. It seeks past the windows
// out of range, so it costs a seek or two per key plus the matches.
func (s *windowStore) FetchAll(from, to time.Time) (statestore.WindowIterator, error) {
	fromMs, toMs := from.UnixMilli(), to.UnixMilli()
	upper := []byte(nil)
	if fromMs > toMs {
		upper = s.data // empty
	}
	c, err := s.openCursor(s.data, s.data, upper)
	if err != nil {
		return nil, err
	}
	return &windowIterator{iterState: iterState{c: c}, all: true, from: fromMs, to: toMs}, nil
}

// ExpireBefore deletes every window that starts before cutoff: one scan of
// the index up to cutoff. It deletes in chunks, each atomic; a failure or
// crash between chunks leaves some windows expired, which the next call
// finishes.
func (s *windowStore) ExpireBefore(cutoff time.Time) error {
	return s.expire(appendTime(bytes.Clone(s.index), cutoff.UnixMilli()), func(body []byte) ([]byte, error) {
		key, start, err := decodeWindowIndex(body)
		return windowBody(s.data, key, start), err
	})
}

// ScanExpired iterates the EncodeWindowKey keys of the windows that start
// before cutoff, over a snapshot, in start order.
func (s *windowStore) ScanExpired(cutoff time.Time) (statestore.Iterator, error) {
	c, err := s.openCursor(s.index, s.index, appendTime(bytes.Clone(s.index), cutoff.UnixMilli()))
	if err != nil {
		return nil, err
	}
	return &expiredIterator{iterState: iterState{c: c}, encode: func(body []byte) ([]byte, error) {
		key, start, err := decodeWindowIndex(body)
		return statestore.EncodeWindowKey(key, time.UnixMilli(start)), err
	}}, nil
}

// expire deletes the index rows below upper and the data rows they name
// (dataKey maps an index body to its data key), in chunks.
func (s *storeBase) expire(upper []byte, dataKey func(body []byte) ([]byte, error)) error {
	return s.writing(func() error {
		return s.db.bdb.View(func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: s.index})
			defer it.Close()
			ops := make([]op, 0, 2*expireChunk)
			for it.Seek(s.index); it.Valid(); it.Next() {
				k := it.Item().KeyCopy(nil)
				if bytes.Compare(k, upper) >= 0 {
					break
				}
				data, err := dataKey(k[len(s.index):])
				if err != nil {
					return fmt.Errorf("%w: index row %q: %w", ErrCorrupt, k, err)
				}
				// The data row first: a split write never leaves a data row
				// without its index row.
				ops = append(ops, op{key: data, del: true}, op{key: k, del: true})
				if len(ops) >= 2*expireChunk {
					if err := s.db.write(ops); err != nil {
						return err
					}
					ops = make([]op, 0, 2*expireChunk)
				}
			}
			return s.db.write(ops)
		})
	})
}

// windowIterator walks the data rows of a windowStore.
type windowIterator struct {
	iterState
	all      bool // FetchAll: skip the windows out of [from, to]
	from, to int64
}

var _ statestore.WindowIterator = (*windowIterator)(nil)

// Next advances to the next window. It returns false at the end, after
// Close, or once the store is closed (then Err returns
// statestore.ErrClosed).
func (it *windowIterator) Next() bool {
	it.reset()
	data := it.c.store.data
	return it.c.step(func() (bool, error) {
		k, ok := it.c.advance()
		for ok {
			key, start, err := decodeWindowBody(k[len(data):])
			if err != nil {
				return false, fmt.Errorf("%w: window row %q: %w", ErrCorrupt, k, err)
			}
			var target []byte
			switch {
			case it.all && start < it.from:
				target = windowBody(data, key, it.from)
			case it.all && start > it.to:
				target = prefixEnd(appendEscaped(bytes.Clone(data), key))
			default:
				return it.yield(key, start, 0)
			}
			if bytes.Compare(target, k) <= 0 { // only a corrupt row can do this
				return false, fmt.Errorf("%w: window row %q does not sort as it decodes", ErrCorrupt, k)
			}
			k, ok = it.c.seek(target)
		}
		return false, nil
	})
}

// Window returns the start of the current window, at millisecond precision.
func (it *windowIterator) Window() time.Time {
	if !it.valid {
		return time.Time{}
	}
	return time.UnixMilli(it.start)
}

// expiredIterator walks index rows, yielding store-level keys and empty
// values.
type expiredIterator struct {
	iterState
	encode func(body []byte) ([]byte, error)
}

// Next advances to the next expired entry.
func (it *expiredIterator) Next() bool {
	it.reset()
	index := it.c.store.index
	return it.c.step(func() (bool, error) {
		k, ok := it.c.advance()
		if !ok {
			return false, nil
		}
		key, err := it.encode(k[len(index):])
		if err != nil {
			return false, fmt.Errorf("%w: index row %q: %w", ErrCorrupt, k, err)
		}
		it.valid, it.key, it.value = true, key, []byte{}
		return true, nil
	})
}
