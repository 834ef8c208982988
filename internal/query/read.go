package query

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/statestore"
)

// The local reads: one store partition's committed rows, decoded for JSON.

// Entry is one key and value of a key-value range.
type Entry struct {
	Key       any   `json:"key"`
	Value     any   `json:"value"`
	Partition int32 `json:"partition"`
}

// Window is one window of a key in a window or session store.
type Window struct {
	Start   time.Time  `json:"start"`
	StartMs int64      `json:"startMs"`
	End     *time.Time `json:"end,omitempty"` // session stores only
	EndMs   *int64     `json:"endMs,omitempty"`
	Value   any        `json:"value"`
}

// KeyReply answers a key lookup.
type KeyReply struct {
	Store     string `json:"store"`
	Key       string `json:"key"`
	Partition int32  `json:"partition"`
	// Value is set for key-value stores, Windows for window and session
	// stores.
	Value any `json:"value,omitempty"`
	// ValidFromMs and ValidToMs bound the validity of a versioned store's
	// value; ValidToMs is absent for the key's latest version.
	ValidFromMs *int64   `json:"validFromMs,omitempty"`
	ValidToMs   *int64   `json:"validToMs,omitempty"`
	Windows     []Window `json:"windows,omitempty"`
	ServedBy    string   `json:"servedBy"`
	// Role is the copy that served: "active" (the partition's owner),
	// "standby" or "restoring" (only when the query's maxLag allowed it).
	Role string `json:"role"`
	// Lag counts the changelog records the copy had not applied (0 for
	// the owner).
	Lag int64 `json:"lag"`
	// OwnerMapAgeMs is set when the instance asked routed the query with
	// an owner map that is not current (the group could not be read): its
	// age (OwnerMapAgeHeader).
	OwnerMapAgeMs *int64 `json:"ownerMapAgeMs,omitempty"`
}

// RangeReply answers a range query.
type RangeReply struct {
	Store   string  `json:"store"`
	Entries []Entry `json:"entries"`
	// Truncated is set when limit entries were returned and more may
	// exist.
	Truncated bool `json:"truncated,omitempty"`
	// Lag is the largest lag of the copies read (0 unless maxLag let a
	// standby or restoring copy serve a partition).
	Lag int64 `json:"lag,omitempty"`
	// OwnerMapAgeMs: see KeyReply; the largest of the partitions'.
	OwnerMapAgeMs *int64 `json:"ownerMapAgeMs,omitempty"`
}

// errNotFound is a key without a value (or windows in range).
var errNotFound = errors.New("query: key not found")

// readVersioned reads one key of a versioned store: its latest version, or
// the version valid at asOf when asOf is set.
func readVersioned(s statestore.Store, codec processor.StoreCodec, kb []byte, asOf *time.Time) (any, *int64, *int64, error) {
	kv, ok := s.(statestore.KeyValueStore)
	if !ok {
		return nil, nil, nil, fmt.Errorf("query: versioned store %q is a %T, not a key-value store", s.Name(), s)
	}
	vs := statestore.NewVersioned(kv, codec.HistoryRetention)
	var (
		rec   statestore.VersionedRecord
		found bool
		err   error
	)
	if asOf != nil {
		rec, found, err = vs.GetAsOf(kb, *asOf)
	} else {
		rec, found, err = vs.Get(kb)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	if !found {
		return nil, nil, nil, errNotFound
	}
	v, err := codec.DecodeValue(rec.Value)
	from := rec.ValidFrom.UnixMilli()
	var to *int64
	if !rec.Latest {
		ms := rec.ValidTo.UnixMilli()
		to = &ms
	}
	return v, &from, to, err
}

// readKey reads one key: its value, or its windows in [from, to].
func readKey(s statestore.Store, codec processor.StoreCodec, kb []byte, from, to time.Time) (any, []Window, error) {
	switch st := s.(type) {
	case statestore.KeyValueStore:
		vb, ok, err := st.Get(kb)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			return nil, nil, errNotFound
		}
		v, err := codec.DecodeValue(vb)
		return v, nil, err
	case statestore.WindowStore:
		it, err := st.Fetch(kb, from, to)
		if err != nil {
			return nil, nil, err
		}
		ws, err := collectWindows(it, codec, func(it statestore.WindowIterator, v any) Window {
			start := it.Window()
			return Window{Start: start.UTC(), StartMs: start.UnixMilli(), Value: v}
		})
		return nil, ws, err
	case statestore.SessionStore:
		it, err := st.FindSessions(kb, from, to)
		if err != nil {
			return nil, nil, err
		}
		ws, err := collectWindows(it, codec, func(it statestore.SessionIterator, v any) Window {
			start, end := it.Start().UTC(), it.End().UTC()
			endMs := end.UnixMilli()
			return Window{Start: start, StartMs: start.UnixMilli(), End: &end, EndMs: &endMs, Value: v}
		})
		return nil, ws, err
	}
	return nil, nil, fmt.Errorf("query: store %q: unsupported kind", s.Name())
}

// collectWindows decodes every entry of a window or session iterator into
// a Window (window builds it from the entry and its decoded value), closes
// the iterator, and reports errNotFound if there was none.
func collectWindows[I interface {
	Next() bool
	Value() []byte
	Err() error
	Close() error
}](it I, codec processor.StoreCodec, window func(I, any) Window) ([]Window, error) {
	defer it.Close()
	var ws []Window
	for it.Next() {
		v, err := codec.DecodeValue(it.Value())
		if err != nil {
			return nil, err
		}
		ws = append(ws, window(it, v))
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	if len(ws) == 0 {
		return nil, errNotFound
	}
	return ws, nil
}

// readRange reads at most limit entries of a key-value store partition
// with keys in [from, to) (nil bounds are open), in key order.
func readRange(s statestore.Store, codec processor.StoreCodec, p int32, from, to []byte, limit int) ([]Entry, bool, error) {
	kv, ok := s.(statestore.KeyValueStore)
	if !ok {
		return nil, false, errRangeKind
	}
	if codec.Versioned {
		return nil, false, errRangeVersioned
	}
	it, err := kv.Range(from, to)
	if err != nil {
		return nil, false, err
	}
	defer it.Close()
	out := []Entry{}
	for it.Next() {
		if len(out) == limit {
			return out, true, nil
		}
		k, err := codec.DecodeKey(it.Key())
		if err != nil {
			return nil, false, err
		}
		v, err := codec.DecodeValue(it.Value())
		if err != nil {
			return nil, false, err
		}
		out = append(out, Entry{Key: k, Value: v, Partition: p})
	}
	return out, false, it.Err()
}

var errRangeVersioned = errors.New("query: range queries do not read versioned stores; read them per key, with asOf")

var errRangeKind = errors.New("query: range queries read key-value stores; window and session stores are read per key with from and to")

// parseTime reads a time bound: Unix milliseconds or RFC 3339; empty
// gives def.
func parseTime(s string, def time.Time) (time.Time, error) {
	if s == "" {
		return def, nil
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(ms), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("time %q is neither Unix milliseconds nor RFC 3339", s)
	}
	return t, nil
}

// The widest time bounds the stores keep (milliseconds).
var (
	minTime = time.UnixMilli(math.MinInt64 / 2)
	maxTime = time.UnixMilli(math.MaxInt64 / 2)
)
