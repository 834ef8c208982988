package statestore

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestWindowKeyRoundTrip(t *testing.T) {
	tests := []struct {
		name  string
		key   []byte
		start time.Time
		want  []byte
	}{
		{"empty key, epoch", nil, ms(0), []byte{0, 0, 0, 0, 0, 0, 0, 0}},
		{"key and time", []byte("ab"), ms(0x0102030405), []byte{'a', 'b', 0, 0, 0, 0x01, 0x02, 0x03, 0x04, 0x05}},
		{"negative time", []byte("k"), ms(-1), []byte{'k', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{"max time", []byte{0}, ms(math.MaxInt64), []byte{0, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{"sub-millisecond dropped", []byte("k"), time.Unix(1, 999_999), []byte{'k', 0, 0, 0, 0, 0, 0, 0x03, 0xe8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := EncodeWindowKey(tt.key, tt.start)
			require.Equal(t, tt.want, b)
			key, start, err := DecodeWindowKey(b)
			require.NoError(t, err)
			require.NotNil(t, key)
			require.Equal(t, []byte(string(tt.key)), key)
			require.Equal(t, time.UnixMilli(tt.start.UnixMilli()), start)
		})
	}
}

func TestSessionKeyRoundTrip(t *testing.T) {
	tests := []struct {
		name       string
		key        []byte
		start, end time.Time
		want       []byte
	}{
		{"empty key", nil, ms(0), ms(1), []byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"end before start in bytes", []byte("k"), ms(2), ms(0x0300), []byte{'k', 0, 0, 0, 0, 0, 0, 0x03, 0, 0, 0, 0, 0, 0, 0, 0, 2}},
		{"negative times", []byte("k"), ms(-2), ms(-1), append([]byte("k"),
			0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := EncodeSessionKey(tt.key, tt.start, tt.end)
			require.Equal(t, tt.want, b)
			key, start, end, err := DecodeSessionKey(b)
			require.NoError(t, err)
			require.Equal(t, []byte(string(tt.key)), key)
			require.Equal(t, tt.start, start)
			require.Equal(t, tt.end, end)
		})
	}
}

func TestDecodeKeyErrors(t *testing.T) {
	for n := range 8 {
		_, _, err := DecodeWindowKey(make([]byte, n))
		require.ErrorIs(t, err, ErrMalformedKey)
		require.ErrorContains(t, err, "statestore: malformed key: window key too short")
	}
	for n := range 16 {
		_, _, _, err := DecodeSessionKey(make([]byte, n))
		require.ErrorIs(t, err, ErrMalformedKey)
		require.ErrorContains(t, err, "statestore: malformed key: session key too short")
	}
	_, _, err := DecodeWindowKey(nil)
	require.Error(t, err)
	_, _, _, err = DecodeSessionKey(nil)
	require.Error(t, err)
}

func TestDecodedKeyIsACopy(t *testing.T) {
	b := EncodeWindowKey([]byte("key"), ms(5))
	key, _, err := DecodeWindowKey(b)
	require.NoError(t, err)
	b[0] = 'X'
	require.Equal(t, []byte("key"), key)

	b = EncodeSessionKey([]byte("key"), ms(5), ms(6))
	key, _, _, err = DecodeSessionKey(b)
	require.NoError(t, err)
	b[0] = 'X'
	require.Equal(t, []byte("key"), key)
}

func TestWindowKeyOrder(t *testing.T) {
	// Equal-length keys, non-negative times: byte order is (key, start).
	type entry struct {
		key   string
		start int64
	}
	sorted := []entry{{"aa", 0}, {"aa", 1}, {"aa", 256}, {"aa", 1 << 40}, {"ab", 0}, {"ba", 5}}
	for i := 1; i < len(sorted); i++ {
		a := EncodeWindowKey([]byte(sorted[i-1].key), ms(sorted[i-1].start))
		b := EncodeWindowKey([]byte(sorted[i].key), ms(sorted[i].start))
		require.Negative(t, bytes.Compare(a, b), "%v < %v", sorted[i-1], sorted[i])
	}
	// Sessions: (key, end, start).
	s1 := EncodeSessionKey([]byte("k"), ms(50), ms(100))
	s2 := EncodeSessionKey([]byte("k"), ms(0), ms(101))
	s3 := EncodeSessionKey([]byte("k"), ms(1), ms(101))
	require.Negative(t, bytes.Compare(s1, s2))
	require.Negative(t, bytes.Compare(s2, s3))
}

func FuzzDecodeWindowKey(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 2, 3})
	f.Add(EncodeWindowKey(nil, ms(0)))
	f.Add(EncodeWindowKey([]byte("key"), ms(1_700_000_000_000)))
	f.Add(EncodeWindowKey([]byte("k"), ms(-1)))
	f.Fuzz(func(t *testing.T, b []byte) {
		key, start, err := DecodeWindowKey(b)
		if len(b) < 8 {
			require.ErrorIs(t, err, ErrMalformedKey)
			return
		}
		require.NoError(t, err)
		require.Equal(t, b, EncodeWindowKey(key, start), "decode then encode gives the input back")
	})
}

func FuzzDecodeSessionKey(f *testing.F) {
	f.Add([]byte{})
	f.Add(make([]byte, 15))
	f.Add(EncodeSessionKey(nil, ms(0), ms(0)))
	f.Add(EncodeSessionKey([]byte("key"), ms(1_700_000_000_000), ms(1_700_000_000_500)))
	f.Add(EncodeSessionKey([]byte("k"), ms(-5), ms(-1)))
	f.Fuzz(func(t *testing.T, b []byte) {
		key, start, end, err := DecodeSessionKey(b)
		if len(b) < 16 {
			require.ErrorIs(t, err, ErrMalformedKey)
			return
		}
		require.NoError(t, err)
		require.Equal(t, b, EncodeSessionKey(key, start, end), "decode then encode gives the input back")
	})
}

func FuzzWindowKeyRoundTrip(f *testing.F) {
	f.Add([]byte("key"), int64(0))
	f.Add([]byte{}, int64(-1))
	f.Add([]byte{0xff, 0}, int64(math.MaxInt64))
	f.Add([]byte("k"), int64(math.MinInt64))
	f.Fuzz(func(t *testing.T, key []byte, startMs int64) {
		key2, start, err := DecodeWindowKey(EncodeWindowKey(key, time.UnixMilli(startMs)))
		require.NoError(t, err)
		require.Equal(t, string(key), string(key2))
		require.Equal(t, startMs, start.UnixMilli())
	})
}

func FuzzSessionKeyRoundTrip(f *testing.F) {
	f.Add([]byte("key"), int64(0), int64(10))
	f.Add([]byte{}, int64(-1), int64(math.MaxInt64))
	f.Add([]byte{0xff}, int64(math.MinInt64), int64(0))
	f.Fuzz(func(t *testing.T, key []byte, startMs, endMs int64) {
		key2, start, end, err := DecodeSessionKey(EncodeSessionKey(key, time.UnixMilli(startMs), time.UnixMilli(endMs)))
		require.NoError(t, err)
		require.Equal(t, string(key), string(key2))
		require.Equal(t, startMs, start.UnixMilli())
		require.Equal(t, endMs, end.UnixMilli())
	})
}
