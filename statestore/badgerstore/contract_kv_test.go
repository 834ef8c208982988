package badgerstore_test

import (
	"bytes"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/statestore"
)

func fillKV(t *testing.T, s statestore.KeyValueStore, keys ...string) {
	t.Helper()
	for _, k := range keys {
		require.NoError(t, s.Put([]byte(k), []byte("v"+k)))
	}
}

func pairs(keys ...string) []kv {
	var out []kv
	for _, k := range keys {
		out = append(out, kv{k, "v" + k})
	}
	return out
}

func rangeKV(t *testing.T, s statestore.KeyValueStore, from, to []byte) []kv {
	t.Helper()
	it, err := s.Range(from, to)
	require.NoError(t, err)
	return drainKV(t, it)
}

func prefixKV(t *testing.T, s statestore.KeyValueStore, prefix []byte) []kv {
	t.Helper()
	it, err := s.PrefixScan(prefix)
	require.NoError(t, err)
	return drainKV(t, it)
}

var kvContracts = []contract{
	{"GetPutDelete", func(t *testing.T, o opener) {
		s := o.kv()
		v, ok, err := s.Get([]byte("a"))
		require.NoError(t, err)
		require.False(t, ok)
		require.Nil(t, v)

		require.NoError(t, s.Put([]byte("a"), []byte("1")))
		require.NoError(t, s.Put([]byte("a"), []byte("2")))
		v, ok, err = s.Get([]byte("a"))
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, []byte("2"), v)
		if !staged(s) {
			n, err := s.ApproximateNumEntries()
			require.NoError(t, err)
			require.EqualValues(t, 1, n)
		}

		require.NoError(t, s.Put([]byte("e"), []byte{}))
		v, ok, err = s.Get([]byte("e"))
		require.NoError(t, err)
		require.True(t, ok, "an empty value is a value")
		require.NotNil(t, v)
		require.Empty(t, v)
		require.NoError(t, s.Put([]byte("e"), nil))
		_, ok, err = s.Get([]byte("e"))
		require.NoError(t, err)
		require.False(t, ok, "a nil value deletes")

		require.NoError(t, s.Delete([]byte("a")))
		require.NoError(t, s.Delete([]byte("a")), "deleting a missing key")
		_, ok, err = s.Get([]byte("a"))
		require.NoError(t, err)
		require.False(t, ok)

		require.NoError(t, s.Put(nil, []byte("nil key")))
		v, ok, err = s.Get([]byte{})
		require.NoError(t, err)
		require.True(t, ok, "a nil and an empty key are the same key")
		require.Equal(t, "nil key", string(v))
		require.Equal(t, []kv{{"", "nil key"}}, rangeKV(t, s, nil, nil))
	}},
	{"Range", func(t *testing.T, o opener) {
		s := o.kv()
		fillKV(t, s, "a", "a\x00", "ab", "b", "ba", "c", "\xff", "\xff\xff")
		all := pairs("a", "a\x00", "ab", "b", "ba", "c", "\xff", "\xff\xff")
		require.Equal(t, all, rangeKV(t, s, nil, nil))
		require.Equal(t, pairs("ab", "b"), rangeKV(t, s, []byte("a\x01"), []byte("ba")))
		require.Equal(t, pairs("b", "ba", "c", "\xff", "\xff\xff"), rangeKV(t, s, []byte("b"), nil))
		require.Equal(t, pairs("a", "a\x00"), rangeKV(t, s, nil, []byte("ab")))
		require.Empty(t, rangeKV(t, s, nil, []byte{}), "an empty, non-nil to is below every key")
		require.Empty(t, rangeKV(t, s, []byte("c"), []byte("b")), "from after to")
		require.Equal(t, all, rangeKV(t, s, []byte{}, nil))
	}},
	{"PrefixScan", func(t *testing.T, o opener) {
		s := o.kv()
		fillKV(t, s, "a", "a\x00", "ab", "abc", "b", "\xff", "\xff\xff")
		require.Equal(t, pairs("a", "a\x00", "ab", "abc"), prefixKV(t, s, []byte("a")))
		require.Equal(t, pairs("ab", "abc"), prefixKV(t, s, []byte("ab")))
		require.Equal(t, pairs("\xff", "\xff\xff"), prefixKV(t, s, []byte("\xff")))
		require.Equal(t, pairs("\xff\xff"), prefixKV(t, s, []byte("\xff\xff")))
		require.Empty(t, prefixKV(t, s, []byte("abd")))
		require.Len(t, prefixKV(t, s, nil), 7, "an empty prefix matches every key")
	}},
	{"IterateWhileWriting", func(t *testing.T, o opener) {
		s := o.kv()
		const n = 300
		var keys []string
		for i := range n {
			keys = append(keys, string([]byte{byte('a' + i/26/26%26), byte('a' + i/26%26), byte('a' + i%26)}))
		}
		fillKV(t, s, keys...)
		it, err := s.Range(nil, nil)
		require.NoError(t, err)
		var seen []string
		for it.Next() {
			k := it.Key()
			seen = append(seen, string(k))
			// Rewrite the current key, delete the next, insert around.
			require.NoError(t, s.Put(k, []byte("new")))
			require.NoError(t, s.Delete(append(bytes.Clone(k[:2]), k[2]+1)))
			require.NoError(t, s.Put(append(bytes.Clone(k), '+'), []byte("ins")))
		}
		require.NoError(t, it.Err())
		require.NoError(t, it.Close())
		require.Equal(t, keys, seen, "the iterator reads its snapshot")
		v, ok, err := s.Get([]byte(keys[0]))
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, "new", string(v))
	}},
	{"Copies", func(t *testing.T, o opener) {
		s := o.kv()
		k, v := []byte("k"), []byte("v")
		require.NoError(t, s.Put(k, v))
		k[0], v[0] = 'X', 'X' // the caller reuses its buffers
		got, ok, err := s.Get([]byte("k"))
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, "v", string(got))
		got[0] = 'Y' // and scribbles over what it got
		got, _, _ = s.Get([]byte("k"))
		require.Equal(t, "v", string(got))

		from, to := []byte("a"), []byte("z")
		it, err := s.Range(from, to)
		require.NoError(t, err)
		from[0], to[0] = 'z', 'a' // bounds are copied
		require.True(t, it.Next())
		key, val := it.Key(), it.Value()
		require.False(t, it.Next())
		key[0], val[0] = 'Q', 'Q'
		require.Equal(t, []kv{{"k", "v"}}, rangeKV(t, s, nil, nil))
		require.NoError(t, it.Close())
	}},
	{"IteratorLifecycle", func(t *testing.T, o opener) {
		s := o.kv()
		fillKV(t, s, "a", "b")
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
		require.ErrorIs(t, it.Err(), statestore.ErrClosed)
	}},
	{"Close", func(t *testing.T, o opener) {
		s := o.kv()
		fillKV(t, s, "a", "b")
		open, err := s.Range(nil, nil)
		require.NoError(t, err)
		require.True(t, open.Next())

		require.NoError(t, s.Close())
		require.NoError(t, s.Close(), "closing twice is not an error")
		require.False(t, open.Next(), "an open iterator stops")
		require.ErrorIs(t, open.Err(), statestore.ErrClosed)
		require.NoError(t, open.Close())

		_, _, err = s.Get([]byte("a"))
		require.ErrorIs(t, err, statestore.ErrClosed)
		require.ErrorIs(t, s.Put([]byte("a"), []byte("1")), statestore.ErrClosed)
		require.ErrorIs(t, s.Put([]byte("a"), nil), statestore.ErrClosed)
		require.ErrorIs(t, s.Delete([]byte("a")), statestore.ErrClosed)
		_, err = s.Range(nil, nil)
		require.ErrorIs(t, err, statestore.ErrClosed)
		_, err = s.PrefixScan([]byte("a"))
		require.ErrorIs(t, err, statestore.ErrClosed)
		_, err = s.ApproximateNumEntries()
		require.ErrorIs(t, err, statestore.ErrClosed)
		require.Equal(t, "store", s.Name())
	}},
	{"Model", func(t *testing.T, o opener) {
		s := o.kv()
		r := rand.New(rand.NewPCG(1, 2))
		keys := []string{"", "a", "a\x00", "a\x00\x01", "ab", "b", "\xff", "\xff\x00"}
		model := map[string]string{}
		want := func(from, to string, open bool, prefix *string) []kv {
			var out []kv
			for _, k := range slices.Sorted(maps.Keys(model)) {
				in := k >= from && (open || k < to)
				if prefix != nil {
					in = strings.HasPrefix(k, *prefix)
				}
				if in {
					out = append(out, kv{k, model[k]})
				}
			}
			return out
		}
		for step := range 1500 {
			k := keys[r.IntN(len(keys))]
			switch op := r.IntN(10); {
			case op < 4:
				v := string(rune('a' + r.IntN(26)))
				require.NoError(t, s.Put([]byte(k), []byte(v)))
				model[k] = v
			case op < 6:
				require.NoError(t, s.Delete([]byte(k)))
				delete(model, k)
			case op < 8:
				to := keys[r.IntN(len(keys))]
				open := r.IntN(3) == 0
				var toB []byte
				if !open {
					toB = []byte(to)
				}
				require.Equal(t, want(k, to, open, nil), rangeKV(t, s, []byte(k), toB), "step %d", step)
			default:
				require.Equal(t, want("", "", true, &k), prefixKV(t, s, []byte(k)), "step %d", step)
			}
		}
		if !staged(s) {
			n, err := s.ApproximateNumEntries()
			require.NoError(t, err)
			require.EqualValues(t, len(model), n)
		}
	}},
}
