package query

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/statestore"
)

// readKey answers window and session stores with every window of the key
// in [from, to], decoded, and errNotFound when there is none.
func TestReadKeyWindowsAndSessions(t *testing.T) {
	codec := processor.StoreCodec{DecodeValue: func(b []byte) (any, error) { return string(b), nil }}
	at := func(ms int64) time.Time { return time.UnixMilli(ms) }

	w := statestore.NewInMemoryWindow("w")
	require.NoError(t, w.Put([]byte("k"), at(1000), []byte("a")))
	require.NoError(t, w.Put([]byte("k"), at(2000), []byte("b")))
	require.NoError(t, w.Put([]byte("other"), at(1000), []byte("x")))
	_, ws, err := readKey(w, codec, []byte("k"), at(0), at(5000))
	require.NoError(t, err)
	require.Equal(t, []Window{
		{Start: at(1000).UTC(), StartMs: 1000, Value: "a"},
		{Start: at(2000).UTC(), StartMs: 2000, Value: "b"},
	}, ws)
	_, _, err = readKey(w, codec, []byte("k"), at(3000), at(5000))
	require.ErrorIs(t, err, errNotFound)

	s := statestore.NewInMemorySession("s")
	require.NoError(t, s.Put([]byte("k"), at(1000), at(1500), []byte("c")))
	_, ws, err = readKey(s, codec, []byte("k"), at(0), at(5000))
	require.NoError(t, err)
	end, endMs := at(1500).UTC(), int64(1500)
	require.Equal(t, []Window{{Start: at(1000).UTC(), StartMs: 1000, End: &end, EndMs: &endMs, Value: "c"}}, ws)
	_, _, err = readKey(s, codec, []byte("nope"), at(0), at(5000))
	require.ErrorIs(t, err, errNotFound)
}

// readVersioned answers a versioned store's key with its latest version, or
// the version as of a time, with its validity; range reads refuse it.
func TestReadVersioned(t *testing.T) {
	codec := processor.StoreCodec{
		DecodeValue: func(b []byte) (any, error) { return string(b), nil },
		Versioned:   true, HistoryRetention: time.Second,
	}
	at := func(ms int64) time.Time { return time.UnixMilli(ms) }
	kv := statestore.NewInMemoryKeyValue("v")
	vs := statestore.NewVersioned(kv, codec.HistoryRetention)
	for _, p := range []struct {
		v  string
		ms int64
	}{{"a", 1000}, {"b", 2000}} {
		_, _, err := vs.Put([]byte("k"), []byte(p.v), at(p.ms))
		require.NoError(t, err)
	}
	ms := func(n int64) *int64 { return &n }

	v, from, to, err := readVersioned(kv, codec, []byte("k"), nil)
	require.NoError(t, err)
	require.Equal(t, "b", v)
	require.Equal(t, ms(2000), from)
	require.Nil(t, to)

	asOf := at(1500)
	v, from, to, err = readVersioned(kv, codec, []byte("k"), &asOf)
	require.NoError(t, err)
	require.Equal(t, "a", v)
	require.Equal(t, ms(1000), from)
	require.Equal(t, ms(2000), to)

	asOf = at(999)
	_, _, _, err = readVersioned(kv, codec, []byte("k"), &asOf)
	require.ErrorIs(t, err, errNotFound)
	_, _, _, err = readVersioned(kv, codec, []byte("other"), nil)
	require.ErrorIs(t, err, errNotFound)

	_, _, err = readRange(kv, codec, 0, nil, nil, 10)
	require.ErrorIs(t, err, errRangeVersioned)
}
