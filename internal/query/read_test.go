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
