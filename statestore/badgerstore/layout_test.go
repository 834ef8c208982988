package badgerstore

import (
	"bytes"
	"cmp"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/statestore"
)

func randBytes(r *rand.Rand) []byte {
	b := make([]byte, r.IntN(5))
	for i := range b {
		b[i] = []byte{0, 1, 2, 0xfe, 0xff, 'a'}[r.IntN(6)]
	}
	return b
}

// TestEscapeKeepsOrder checks that esc keeps the byte order of keys and that
// no escaped key is a prefix of another.
func TestEscapeKeepsOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for range 20000 {
		a, b := randBytes(r), randBytes(r)
		ea, eb := appendEscaped(nil, a), appendEscaped(nil, b)
		require.Equal(t, bytes.Compare(a, b), bytes.Compare(ea, eb), "%q %q", a, b)
		if !bytes.Equal(a, b) {
			require.False(t, bytes.HasPrefix(ea, eb) || bytes.HasPrefix(eb, ea), "%q %q", a, b)
		}
		key, rest, err := readEscaped(append(ea, 'x'))
		require.NoError(t, err)
		require.Equal(t, a, key)
		require.Equal(t, []byte("x"), rest)
	}
}

func TestTimeKeepsOrder(t *testing.T) {
	times := []int64{math.MinInt64, -1e15, -1, 0, 1, 1e12, math.MaxInt64}
	for i, a := range times {
		for _, b := range times[i:] {
			require.Equal(t, cmp.Compare(a, b), bytes.Compare(appendTime(nil, a), appendTime(nil, b)), "%d %d", a, b)
		}
		got, err := readTime(appendTime(nil, a))
		require.NoError(t, err)
		require.Equal(t, a, got)
	}
	_, err := readTime([]byte{1, 2})
	require.ErrorIs(t, err, errMalformed)
}

func TestRowsRoundTrip(t *testing.T) {
	prefix := partitionPrefix("store", 7)
	key := []byte("k\x00\xff")
	data, index, err := rows(statestore.KindWindow, prefix, statestore.EncodeWindowKey(key, time.UnixMilli(-3)))
	require.NoError(t, err)
	k, start, err := decodeWindowBody(data[len(prefix)+1:])
	require.NoError(t, err)
	require.Equal(t, key, k)
	require.EqualValues(t, -3, start)
	k, start, err = decodeWindowIndex(index[len(prefix)+1:])
	require.NoError(t, err)
	require.Equal(t, key, k)
	require.EqualValues(t, -3, start)

	data, index, err = rows(statestore.KindSession, prefix, statestore.EncodeSessionKey(key, time.UnixMilli(4), time.UnixMilli(9)))
	require.NoError(t, err)
	k, s, e, err := decodeSessionBody(data[len(prefix)+1:])
	require.NoError(t, err)
	require.Equal(t, []any{key, int64(4), int64(9)}, []any{k, s, e})
	k, s, e, err = decodeSessionIndex(index[len(prefix)+1:])
	require.NoError(t, err)
	require.Equal(t, []any{key, int64(4), int64(9)}, []any{k, s, e})

	name, partition, tag, ok := parseRowKey(data)
	require.True(t, ok)
	require.Equal(t, "store", name)
	require.EqualValues(t, 7, partition)
	require.EqualValues(t, tagData, tag)
	_, _, _, ok = parseRowKey([]byte{0, 'c'})
	require.False(t, ok)

	_, _, err = rows(statestore.KindWindow, prefix, []byte("short"))
	require.ErrorIs(t, err, statestore.ErrMalformedKey)
	_, _, err = rows(statestore.Kind(0), prefix, nil)
	require.Error(t, err)
}

func TestPrefixEnd(t *testing.T) {
	require.Nil(t, prefixEnd(nil))
	require.Nil(t, prefixEnd([]byte{0xff, 0xff}))
	require.Equal(t, []byte("b"), prefixEnd([]byte("a\xff")))
	require.Equal(t, []byte("a\x00\x02"), prefixEnd([]byte("a\x00\x01")))
}

// FuzzDecode feeds arbitrary bytes to the row decoders: they must never
// panic, and what they accept must encode back to the same bytes.
func FuzzDecode(f *testing.F) {
	f.Add(windowBody(nil, []byte("k\x00"), 5))
	f.Add(sessionBody(nil, []byte("key"), -1, 9))
	f.Add(windowIndexBody(nil, nil, 0))
	f.Add(sessionIndexBody(nil, []byte{0, 0xff}, 1, 2))
	f.Add([]byte{0, 2})
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, b []byte) {
		if k, s, err := decodeWindowBody(b); err == nil {
			require.Equal(t, b, windowBody(nil, k, s))
		}
		if k, s, e, err := decodeSessionBody(b); err == nil {
			require.Equal(t, b, sessionBody(nil, k, s, e))
		}
		if k, s, err := decodeWindowIndex(b); err == nil {
			require.Equal(t, b, windowIndexBody(nil, k, s))
		}
		if k, s, e, err := decodeSessionIndex(b); err == nil {
			require.Equal(t, b, sessionIndexBody(nil, k, s, e))
		}
		parseRowKey(b)
	})
}
