package statestore

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// kv is a key-value pair as tests write them.
type kv struct{ k, v string }

// drainKV reads it to the end, closes it and returns what it yielded.
func drainKV(t *testing.T, it Iterator) []kv {
	t.Helper()
	var out []kv
	for it.Next() {
		out = append(out, kv{string(it.Key()), string(it.Value())})
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	return out
}

func newFilledKV(t *testing.T, keys ...string) KeyValueStore {
	t.Helper()
	s := NewInMemoryKeyValue("kv")
	for _, k := range keys {
		require.NoError(t, s.Put([]byte(k), []byte("v"+k)))
	}
	return s
}

func pairs(keys ...string) []kv {
	var out []kv
	for _, k := range keys {
		out = append(out, kv{k, "v" + k})
	}
	return out
}

func TestKeyValueGetPutDelete(t *testing.T) {
	s := NewInMemoryKeyValue("counts")
	require.Equal(t, "counts", s.Name())

	v, ok, err := s.Get([]byte("a"))
	require.NoError(t, err)
	require.False(t, ok)
	require.Nil(t, v)

	require.NoError(t, s.Put([]byte("a"), []byte("1")))
	v, ok, err = s.Get([]byte("a"))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []byte("1"), v)

	// Overwrite.
	require.NoError(t, s.Put([]byte("a"), []byte("2")))
	v, _, _ = s.Get([]byte("a"))
	require.Equal(t, []byte("2"), v)
	n, err := s.ApproximateNumEntries()
	require.NoError(t, err)
	require.EqualValues(t, 1, n)

	// An empty value is a value, not a delete.
	require.NoError(t, s.Put([]byte("e"), []byte{}))
	v, ok, _ = s.Get([]byte("e"))
	require.True(t, ok)
	require.NotNil(t, v)
	require.Empty(t, v)

	// A nil value deletes.
	require.NoError(t, s.Put([]byte("e"), nil))
	_, ok, _ = s.Get([]byte("e"))
	require.False(t, ok)

	// Delete, and delete again.
	require.NoError(t, s.Delete([]byte("a")))
	require.NoError(t, s.Delete([]byte("a")))
	_, ok, _ = s.Get([]byte("a"))
	require.False(t, ok)
	n, _ = s.ApproximateNumEntries()
	require.Zero(t, n)

	// A nil and an empty key are the same key.
	require.NoError(t, s.Put(nil, []byte("x")))
	v, ok, _ = s.Get([]byte{})
	require.True(t, ok)
	require.Equal(t, []byte("x"), v)
	require.Equal(t, []kv{{"", "x"}}, drainKV(t, must(s.Range(nil, nil))))
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestKeyValueRange(t *testing.T) {
	s := newFilledKV(t, "b", "a", "c", "ab", "d", "\xff", "")
	tests := []struct {
		name     string
		from, to []byte
		want     []kv
	}{
		{"all", nil, nil, pairs("", "a", "ab", "b", "c", "d", "\xff")},
		{"from", []byte("b"), nil, pairs("b", "c", "d", "\xff")},
		{"from missing key", []byte("aa"), nil, pairs("ab", "b", "c", "d", "\xff")},
		{"to is exclusive", nil, []byte("b"), pairs("", "a", "ab")},
		{"both", []byte("a"), []byte("c"), pairs("a", "ab", "b")},
		{"empty from is the start", []byte{}, []byte("a"), pairs("")},
		{"empty to is a bound", nil, []byte{}, nil},
		{"from equals to", []byte("b"), []byte("b"), nil},
		{"from after to", []byte("c"), []byte("a"), nil},
		{"past the end", []byte("\xff\x00"), nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it, err := s.Range(tt.from, tt.to)
			require.NoError(t, err)
			require.Equal(t, tt.want, drainKV(t, it))
		})
	}
}

func TestKeyValuePrefixScan(t *testing.T) {
	s := newFilledKV(t, "a", "ab", "abc", "ac", "b", "\xff", "\xff\xff", "\xff\xff\x01", "a\xff", "a\xff\x00", "b\x00")
	tests := []struct {
		prefix string
		want   []kv
	}{
		{"", pairs("a", "ab", "abc", "ac", "a\xff", "a\xff\x00", "b", "b\x00", "\xff", "\xff\xff", "\xff\xff\x01")},
		{"a", pairs("a", "ab", "abc", "ac", "a\xff", "a\xff\x00")},
		{"ab", pairs("ab", "abc")},
		{"abc", pairs("abc")},
		{"abcd", nil},
		{"a\xff", pairs("a\xff", "a\xff\x00")},
		{"b", pairs("b", "b\x00")},
		{"\xff", pairs("\xff", "\xff\xff", "\xff\xff\x01")},
		{"\xff\xff", pairs("\xff\xff", "\xff\xff\x01")},
		{"z", nil},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.prefix), func(t *testing.T) {
			it, err := s.PrefixScan([]byte(tt.prefix))
			require.NoError(t, err)
			require.Equal(t, tt.want, drainKV(t, it))
		})
	}
	all, err := s.PrefixScan(nil)
	require.NoError(t, err)
	require.Len(t, drainKV(t, all), 11)
}

func TestKeyValueIterateWhileWriting(t *testing.T) {
	const n = 5000 // many nodes, so writes copy paths under the iterator
	s := NewInMemoryKeyValue("kv")
	var want []kv
	for i := range n {
		k := fmt.Sprintf("k%05d", i)
		require.NoError(t, s.Put([]byte(k), []byte("v")))
		want = append(want, kv{k, "v"})
	}

	it, err := s.Range(nil, nil)
	require.NoError(t, err)
	var got []kv
	for it.Next() {
		got = append(got, kv{string(it.Key()), string(it.Value())})
		// The processor rewrites the current key, deletes the next one and
		// inserts keys before and after the cursor.
		require.NoError(t, s.Put(it.Key(), []byte("new")))
		require.NoError(t, s.Delete([]byte(fmt.Sprintf("k%05d", len(got)))))
		require.NoError(t, s.Put([]byte("k"+string(it.Key())), []byte("ins")))
		require.NoError(t, s.Put([]byte("a"+string(it.Key())), []byte("ins")))
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	require.Equal(t, want, got, "the iterator walks the snapshot")

	// The store has the writes: each key was deleted, then rewritten when
	// the iteration reached it, and two keys were inserted per key.
	m, err := s.ApproximateNumEntries()
	require.NoError(t, err)
	require.EqualValues(t, 3*n, m)
	it, err = s.PrefixScan([]byte("k0"))
	require.NoError(t, err)
	got = drainKV(t, it)
	require.Len(t, got, n)
	for _, p := range got {
		require.Equal(t, "new", p.v)
	}
}

func TestKeyValueCopies(t *testing.T) {
	s := NewInMemoryKeyValue("kv")
	k, v := []byte("key"), []byte("val")
	require.NoError(t, s.Put(k, v))
	k[0], v[0] = 'X', 'X' // the caller reuses its buffers

	got, ok, err := s.Get([]byte("key"))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []byte("val"), got)
	got[0] = 'Y' // and scribbles over what it got
	again, _, _ := s.Get([]byte("key"))
	require.Equal(t, []byte("val"), again)

	it, err := s.Range(nil, nil)
	require.NoError(t, err)
	require.True(t, it.Next())
	it.Key()[0], it.Value()[0] = 'Z', 'Z'
	require.NoError(t, it.Close())
	require.Equal(t, []kv{{"key", "val"}}, drainKV(t, must(s.Range(nil, nil))))

	// Bounds are copied too.
	to := []byte("zzz")
	it, err = s.Range(nil, to)
	require.NoError(t, err)
	to[0] = 'a'
	require.Equal(t, []kv{{"key", "val"}}, drainKV(t, it))
}

func TestKeyValueIteratorLifecycle(t *testing.T) {
	s := newFilledKV(t, "a", "b")
	it, err := s.Range(nil, nil)
	require.NoError(t, err)
	require.Nil(t, it.Key(), "before Next")
	require.Nil(t, it.Value(), "before Next")
	require.True(t, it.Next())
	require.True(t, it.Next())
	require.False(t, it.Next())
	require.Nil(t, it.Key(), "after the end")
	require.False(t, it.Next(), "stays at the end")
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	require.NoError(t, it.Close(), "Close is idempotent")
	require.NoError(t, it.Err(), "an iteration that ended is not an error")

	it, err = s.Range(nil, nil)
	require.NoError(t, err)
	require.True(t, it.Next())
	require.NoError(t, it.Close())
	require.Nil(t, it.Key())
	require.False(t, it.Next())
	require.ErrorIs(t, it.Err(), ErrClosed)
}

func TestKeyValueClose(t *testing.T) {
	s := newFilledKV(t, "a", "b")
	open, err := s.Range(nil, nil)
	require.NoError(t, err)
	require.True(t, open.Next())

	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "closing twice is not an error")

	require.False(t, open.Next(), "an open iterator stops")
	require.ErrorIs(t, open.Err(), ErrClosed)
	require.NoError(t, open.Close())

	_, _, err = s.Get([]byte("a"))
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, s.Put([]byte("a"), []byte("1")), ErrClosed)
	require.ErrorIs(t, s.Put([]byte("a"), nil), ErrClosed)
	require.ErrorIs(t, s.Delete([]byte("a")), ErrClosed)
	_, err = s.Range(nil, nil)
	require.ErrorIs(t, err, ErrClosed)
	_, err = s.PrefixScan([]byte("a"))
	require.ErrorIs(t, err, ErrClosed)
	_, err = s.ApproximateNumEntries()
	require.ErrorIs(t, err, ErrClosed)
	require.Equal(t, "kv", s.Name())
}

func TestPrefixEnd(t *testing.T) {
	tests := []struct{ in, want []byte }{
		{nil, nil},
		{[]byte{}, nil},
		{[]byte("a"), []byte("b")},
		{[]byte("a\xff"), []byte("b")},
		{[]byte("a\xfe\xff"), []byte("a\xff")},
		{[]byte("\xff\xff"), nil},
	}
	for _, tt := range tests {
		in := append([]byte(nil), tt.in...)
		require.Equal(t, tt.want, prefixEnd(tt.in), "%q", tt.in)
		require.Equal(t, in, append([]byte(nil), tt.in...), "input unchanged")
	}
}
