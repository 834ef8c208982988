package badgerstore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/statestore"
)

// The versioned store's cases, run over the key-value store of every
// engine: in memory, Badger and the staging overlays over each.

// vop is one step of a versioned case: a put (value nil for a tombstone),
// a delete, or a lookup (get: latest; asOf >= 0: as of that time).
type vop struct {
	op    string // "put", "del", "get", "asof", "rows", "latest"
	key   string
	value *string
	ts    int64

	// put: the status and, for PutHistory, validTo.
	status  statestore.PutStatus
	validTo int64
	// del, get, asof: the version found, or none when want is nil.
	want     *string
	wantFrom int64
	wantTo   int64 // -1: latest
	// rows: the key-value store's number of entries.
	rows int
}

func vs(s string) *string { return &s }

var versionedCases = []struct {
	name      string
	retention time.Duration
	ops       []vop
}{
	{"in order", 100 * time.Millisecond, []vop{
		{op: "get", key: "a"},
		{op: "put", key: "a", value: vs("1"), ts: 10, status: statestore.PutLatest},
		{op: "put", key: "a", value: vs("2"), ts: 20, status: statestore.PutLatest},
		{op: "get", key: "a", want: vs("2"), wantFrom: 20, wantTo: -1},
		{op: "asof", key: "a", ts: 9},
		{op: "asof", key: "a", ts: 10, want: vs("1"), wantFrom: 10, wantTo: 20},
		{op: "asof", key: "a", ts: 19, want: vs("1"), wantFrom: 10, wantTo: 20},
		{op: "asof", key: "a", ts: 20, want: vs("2"), wantFrom: 20, wantTo: -1},
		{op: "asof", key: "b", ts: 20},
	}},
	{"out of order into history", 100 * time.Millisecond, []vop{
		{op: "put", key: "a", value: vs("3"), ts: 30, status: statestore.PutLatest},
		{op: "put", key: "a", value: vs("1"), ts: 10, status: statestore.PutHistory, validTo: 30},
		{op: "put", key: "a", value: vs("2"), ts: 20, status: statestore.PutHistory, validTo: 30},
		{op: "asof", key: "a", ts: 15, want: vs("1"), wantFrom: 10, wantTo: 20},
		{op: "asof", key: "a", ts: 25, want: vs("2"), wantFrom: 20, wantTo: 30},
		{op: "get", key: "a", want: vs("3"), wantFrom: 30, wantTo: -1},
		// Same timestamp replaces, in history and as the latest.
		{op: "put", key: "a", value: vs("2b"), ts: 20, status: statestore.PutHistory, validTo: 30},
		{op: "asof", key: "a", ts: 20, want: vs("2b"), wantFrom: 20, wantTo: 30},
		{op: "put", key: "a", value: vs("3b"), ts: 30, status: statestore.PutLatest},
		{op: "get", key: "a", want: vs("3b"), wantFrom: 30, wantTo: -1},
	}},
	{"tombstones", 100 * time.Millisecond, []vop{
		{op: "latest", key: "a", ts: -1},
		{op: "put", key: "a", value: vs("1"), ts: 10, status: statestore.PutLatest},
		{op: "put", key: "a", ts: 20, status: statestore.PutLatest},
		{op: "latest", key: "a", ts: 20},
		{op: "get", key: "a"},
		{op: "asof", key: "a", ts: 15, want: vs("1"), wantFrom: 10, wantTo: 20},
		{op: "asof", key: "a", ts: 25},
		{op: "put", key: "a", value: vs("3"), ts: 30, status: statestore.PutLatest},
		{op: "asof", key: "a", ts: 25},
		{op: "del", key: "a", ts: 12, want: vs("1"), wantFrom: 10, wantTo: 20},
		{op: "asof", key: "a", ts: 12},
		{op: "asof", key: "a", ts: 11, want: vs("1"), wantFrom: 10, wantTo: 12},
		{op: "del", key: "a", ts: 40, want: vs("3"), wantFrom: 30, wantTo: -1},
		{op: "get", key: "a"},
		{op: "del", key: "z", ts: 40},
	}},
	{"history retention", 10 * time.Millisecond, []vop{
		{op: "put", key: "a", value: vs("1"), ts: 100, status: statestore.PutLatest},
		{op: "put", key: "a", value: vs("2"), ts: 105, status: statestore.PutLatest},
		{op: "put", key: "b", value: vs("x"), ts: 120, status: statestore.PutLatest},
		// Stream time 120, cutoff 110: history before it is not seen.
		{op: "asof", key: "a", ts: 102},
		{op: "asof", key: "a", ts: 106, want: vs("2"), wantFrom: 105, wantTo: -1},
		{op: "put", key: "a", value: vs("0"), ts: 109, status: statestore.PutExpired},
		{op: "put", key: "a", value: vs("3"), ts: 110, status: statestore.PutLatest},
		{op: "asof", key: "a", ts: 110, want: vs("3"), wantFrom: 110, wantTo: -1},
		{op: "del", key: "a", ts: 109},
		{op: "get", key: "a", want: vs("3"), wantFrom: 110, wantTo: -1},
		// The latest version never expires.
		{op: "put", key: "c", value: vs("y"), ts: 200, status: statestore.PutLatest},
		{op: "asof", key: "b", ts: 150, want: vs("x"), wantFrom: 120, wantTo: -1},
		{op: "asof", key: "b", ts: 119},
		{op: "asof", key: "a", ts: 105},
		{op: "asof", key: "a", ts: 195, want: vs("3"), wantFrom: 110, wantTo: -1},
	}},
	{"expiry deletes what no lookup can return", 5 * time.Millisecond, []vop{
		{op: "put", key: "a", value: vs("1"), ts: 10, status: statestore.PutLatest},
		{op: "put", key: "a", value: vs("2"), ts: 20, status: statestore.PutLatest},
		{op: "put", key: "a", value: vs("3"), ts: 30, status: statestore.PutLatest},
		{op: "put", key: "a", value: vs("2b"), ts: 26, status: statestore.PutHistory, validTo: 30},
		// meta, latest a, older a@20 (to 26) and a@26 (to 30), and their ends.
		{op: "rows", rows: 6},
		{op: "asof", key: "a", ts: 25, want: vs("2"), wantFrom: 20, wantTo: 26},
		{op: "put", key: "b", value: vs("x"), ts: 31, status: statestore.PutLatest},
		{op: "asof", key: "a", ts: 26, want: vs("2b"), wantFrom: 26, wantTo: 30},
		{op: "rows", rows: 5},
		{op: "put", key: "b", value: vs("y"), ts: 100, status: statestore.PutLatest},
		{op: "rows", rows: 5}, // meta, latest a and b, older b@31 (to 100) and its end
		{op: "get", key: "a", want: vs("3"), wantFrom: 30, wantTo: -1},
		{op: "asof", key: "b", ts: 99, want: vs("x"), wantFrom: 31, wantTo: 100},
		{op: "put", key: "c", value: vs("z"), ts: 200, status: statestore.PutLatest},
		{op: "rows", rows: 4}, // meta, latest a, b and c
		{op: "asof", key: "b", ts: 99},
	}},
	{"zero retention", 0, []vop{
		{op: "put", key: "a", value: vs("1"), ts: 10, status: statestore.PutLatest},
		{op: "put", key: "a", value: vs("0"), ts: 9, status: statestore.PutExpired},
		{op: "put", key: "a", value: vs("1b"), ts: 10, status: statestore.PutLatest},
		{op: "put", key: "a", value: vs("2"), ts: 11, status: statestore.PutLatest},
		{op: "asof", key: "a", ts: 10},
		{op: "get", key: "a", want: vs("2"), wantFrom: 11, wantTo: -1},
	}},
	{"empty values and binary keys", 100 * time.Millisecond, []vop{
		{op: "put", key: "", value: vs(""), ts: 10, status: statestore.PutLatest},
		{op: "get", key: "", want: vs(""), wantFrom: 10, wantTo: -1},
		{op: "put", key: "\x00", value: vs("k0"), ts: 5, status: statestore.PutLatest},
		{op: "put", key: "\x00\x00", value: vs("k00"), ts: 6, status: statestore.PutLatest},
		{op: "asof", key: "\x00", ts: 7, want: vs("k0"), wantFrom: 5, wantTo: -1},
		{op: "asof", key: "", ts: 9},
	}},
}

func TestContractVersioned(t *testing.T) {
	runContracts(t, []contract{{"versioned", func(t *testing.T, open opener) {
		for _, c := range versionedCases {
			t.Run(c.name, func(t *testing.T) {
				kv := open.kv()
				runVersioned(t, kv, statestore.NewVersioned(kv, c.retention), c.ops)
				// A new view over the same key-value store (as after a
				// restore) reads the same versions and stream time.
				again := statestore.NewVersioned(kv, c.retention)
				runVersioned(t, kv, again, lookups(c.ops))
			})
		}
	}}})
}

// lookups returns the gets and as-of lookups of ops, answered by the state
// after all of ops: those after the last write.
func lookups(ops []vop) []vop {
	var out []vop
	for _, o := range ops {
		switch o.op {
		case "put", "del":
			out = out[:0]
		case "rows":
		default:
			out = append(out, o)
		}
	}
	return out
}

func rows(t *testing.T, kv statestore.KeyValueStore) int {
	t.Helper()
	it, err := kv.Range(nil, nil)
	require.NoError(t, err)
	defer it.Close()
	n := 0
	for it.Next() {
		n++
	}
	require.NoError(t, it.Err())
	return n
}

func runVersioned(t *testing.T, kv statestore.KeyValueStore, s statestore.VersionedStore, ops []vop) {
	t.Helper()
	for i, o := range ops {
		at := time.UnixMilli(o.ts)
		var (
			rec statestore.VersionedRecord
			ok  bool
			err error
		)
		switch o.op {
		case "put":
			var v []byte
			if o.value != nil {
				v = []byte(*o.value)
			}
			status, validTo, err := s.Put([]byte(o.key), v, at)
			require.NoError(t, err, "#%d", i)
			require.Equal(t, o.status, status, "#%d put status", i)
			if status == statestore.PutHistory {
				require.Equal(t, o.validTo, validTo.UnixMilli(), "#%d validTo", i)
			}
			continue
		case "del":
			rec, ok, err = s.Delete([]byte(o.key), at)
		case "get":
			rec, ok, err = s.Get([]byte(o.key))
		case "asof":
			rec, ok, err = s.GetAsOf([]byte(o.key), at)
		case "rows":
			require.Equal(t, o.rows, rows(t, kv), "#%d rows", i)
			continue
		case "latest": // ts: the latest version's timestamp, -1 for none
			lt, ok, err := s.LatestTimestamp([]byte(o.key))
			require.NoError(t, err)
			require.Equal(t, o.ts != -1, ok, "#%d latest", i)
			if ok {
				require.Equal(t, o.ts, lt.UnixMilli(), "#%d latest", i)
			}
			continue
		}
		require.NoError(t, err, "#%d", i)
		if o.want == nil {
			require.False(t, ok, "#%d %s %q at %d: found %q", i, o.op, o.key, o.ts, rec.Value)
			continue
		}
		require.True(t, ok, "#%d %s %q at %d: not found", i, o.op, o.key, o.ts)
		require.Equal(t, *o.want, string(rec.Value), "#%d value", i)
		require.Equal(t, o.wantFrom, rec.ValidFrom.UnixMilli(), "#%d validFrom", i)
		require.Equal(t, o.wantTo == -1, rec.Latest, "#%d latest", i)
		if o.wantTo != -1 {
			require.Equal(t, o.wantTo, rec.ValidTo.UnixMilli(), "#%d validTo", i)
		}
	}
}
