package statestore

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// win is a windowed entry as tests write them; start in milliseconds.
type win struct {
	k     string
	start int64
	v     string
}

func ms(n int64) time.Time { return time.UnixMilli(n) }

// drainWindows reads it to the end, closes it and returns what it yielded.
func drainWindows(t *testing.T, it WindowIterator) []win {
	t.Helper()
	var out []win
	for it.Next() {
		w := it.Window()
		require.Equal(t, time.UnixMilli(w.UnixMilli()), w, "a time.UnixMilli value")
		out = append(out, win{string(it.Key()), w.UnixMilli(), string(it.Value())})
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	return out
}

func newFilledWindow(t *testing.T, entries ...win) WindowStore {
	t.Helper()
	s := NewInMemoryWindow("windows")
	for _, e := range entries {
		require.NoError(t, s.Put([]byte(e.k), ms(e.start), []byte(e.v)))
	}
	return s
}

func TestWindowGetPutDelete(t *testing.T) {
	s := NewInMemoryWindow("windows")
	require.Equal(t, "windows", s.Name())

	_, ok, err := s.Get([]byte("a"), ms(0))
	require.NoError(t, err)
	require.False(t, ok)

	require.NoError(t, s.Put([]byte("a"), ms(1000), []byte("1")))
	require.NoError(t, s.Put([]byte("a"), ms(2000), []byte("2")))
	v, ok, err := s.Get([]byte("a"), ms(1000))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []byte("1"), v)
	_, ok, _ = s.Get([]byte("a"), ms(1500))
	require.False(t, ok, "another window")
	_, ok, _ = s.Get([]byte("b"), ms(1000))
	require.False(t, ok, "another key")

	// Overwrite, then delete with nil.
	require.NoError(t, s.Put([]byte("a"), ms(1000), []byte("one")))
	v, _, _ = s.Get([]byte("a"), ms(1000))
	require.Equal(t, []byte("one"), v)
	require.NoError(t, s.Put([]byte("a"), ms(1000), nil))
	_, ok, _ = s.Get([]byte("a"), ms(1000))
	require.False(t, ok)
	require.NoError(t, s.Put([]byte("a"), ms(1000), nil), "deleting a missing window")

	// Times are kept in milliseconds: sub-millisecond parts are dropped.
	at := time.Date(2024, 5, 1, 12, 0, 0, 123_456_789, time.UTC)
	require.NoError(t, s.Put([]byte("t"), at, []byte("x")))
	_, ok, _ = s.Get([]byte("t"), at.Truncate(time.Millisecond))
	require.True(t, ok)
	_, ok, _ = s.Get([]byte("t"), at.Truncate(time.Millisecond).Add(999*time.Microsecond))
	require.True(t, ok, "same millisecond")
	got := drainWindows(t, must(s.Fetch([]byte("t"), at.Add(-time.Hour), at)))
	require.Equal(t, []win{{"t", at.UnixMilli(), "x"}}, got)
}

func TestWindowFetch(t *testing.T) {
	s := newFilledWindow(t,
		win{"a", 30, "a30"}, win{"a", 10, "a10"}, win{"a", 20, "a20"}, win{"a", -5, "a-5"},
		win{"ab", 15, "ab15"}, win{"", 10, "e10"}, win{"b", 10, "b10"},
	)
	tests := []struct {
		name     string
		key      string
		from, to int64
		want     []win
	}{
		{"all of a, by start", "a", -100, 100, []win{{"a", -5, "a-5"}, {"a", 10, "a10"}, {"a", 20, "a20"}, {"a", 30, "a30"}}},
		{"bounds are inclusive", "a", 10, 20, []win{{"a", 10, "a10"}, {"a", 20, "a20"}}},
		{"one instant", "a", 20, 20, []win{{"a", 20, "a20"}}},
		{"between windows", "a", 11, 19, nil},
		{"from after to", "a", 30, 10, nil},
		{"a prefix of another key", "ab", 0, 100, []win{{"ab", 15, "ab15"}}},
		{"empty key", "", 0, 100, []win{{"", 10, "e10"}}},
		{"missing key", "c", 0, 100, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it, err := s.Fetch([]byte(tt.key), ms(tt.from), ms(tt.to))
			require.NoError(t, err)
			require.Equal(t, tt.want, drainWindows(t, it))
		})
	}
}

func TestWindowFetchAll(t *testing.T) {
	var entries []win
	for _, k := range []string{"b", "a", "ab", "c"} {
		for start := int64(0); start < 100; start += 10 {
			entries = append(entries, win{k, start, fmt.Sprint(k, start)})
		}
	}
	s := newFilledWindow(t, entries...)
	tests := []struct {
		name     string
		from, to int64
		want     []win
	}{
		{"one window per key", 50, 50, []win{{"a", 50, "a50"}, {"ab", 50, "ab50"}, {"b", 50, "b50"}, {"c", 50, "c50"}}},
		{"two windows per key, key then start", 15, 30, []win{
			{"a", 20, "a20"}, {"a", 30, "a30"}, {"ab", 20, "ab20"}, {"ab", 30, "ab30"},
			{"b", 20, "b20"}, {"b", 30, "b30"}, {"c", 20, "c20"}, {"c", 30, "c30"},
		}},
		{"first windows", -10, 0, []win{{"a", 0, "a0"}, {"ab", 0, "ab0"}, {"b", 0, "b0"}, {"c", 0, "c0"}}},
		{"last windows", 90, 1000, []win{{"a", 90, "a90"}, {"ab", 90, "ab90"}, {"b", 90, "b90"}, {"c", 90, "c90"}}},
		{"none", 91, 99, nil},
		{"from after to", 50, 40, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it, err := s.FetchAll(ms(tt.from), ms(tt.to))
			require.NoError(t, err)
			require.Equal(t, tt.want, drainWindows(t, it))
		})
	}
	all := drainWindows(t, must(s.FetchAll(ms(-1), ms(100))))
	require.Len(t, all, 40)
	require.Equal(t, win{"a", 0, "a0"}, all[0])
	require.Equal(t, win{"c", 90, "c90"}, all[39])
}

func TestWindowFetchAllManyKeys(t *testing.T) {
	s := NewInMemoryWindow("w")
	var want []win
	for k := range 500 {
		key := fmt.Sprintf("k%03d", k)
		for start := int64(0); start < 50; start++ {
			require.NoError(t, s.Put([]byte(key), ms(start), []byte{byte(start)}))
			if start >= 20 && start <= 22 {
				want = append(want, win{key, start, string([]byte{byte(start)})})
			}
		}
	}
	require.Equal(t, want, drainWindows(t, must(s.FetchAll(ms(20), ms(22)))))
}

func TestWindowExpireBefore(t *testing.T) {
	s := newFilledWindow(t,
		win{"a", 10, "a10"}, win{"a", 20, "a20"}, win{"b", 5, "b5"}, win{"b", 30, "b30"}, win{"c", 20, "c20"},
	)
	require.NoError(t, s.ExpireBefore(ms(20)))
	want := []win{{"a", 20, "a20"}, {"b", 30, "b30"}, {"c", 20, "c20"}}
	require.Equal(t, want, drainWindows(t, must(s.FetchAll(ms(-1000), ms(1000)))))
	_, ok, _ := s.Get([]byte("a"), ms(10))
	require.False(t, ok)

	require.NoError(t, s.ExpireBefore(ms(20)), "nothing more to expire")
	// An overwritten and a deleted window expire once, correctly.
	require.NoError(t, s.Put([]byte("a"), ms(20), []byte("again")))
	require.NoError(t, s.Put([]byte("c"), ms(20), nil))
	require.NoError(t, s.ExpireBefore(ms(30)))
	require.Equal(t, []win{{"b", 30, "b30"}}, drainWindows(t, must(s.FetchAll(ms(-1000), ms(1000)))))
	require.NoError(t, s.ExpireBefore(ms(1000)))
	require.Empty(t, drainWindows(t, must(s.FetchAll(ms(-1000), ms(1000)))))
}

func TestWindowIterateWhileWriting(t *testing.T) {
	s := NewInMemoryWindow("w")
	var want []win
	for start := range int64(3000) {
		require.NoError(t, s.Put([]byte("k"), ms(start), []byte("v")))
		want = append(want, win{"k", start, "v"})
	}
	it, err := s.Fetch([]byte("k"), ms(0), ms(5000))
	require.NoError(t, err)
	var got []win
	for it.Next() {
		got = append(got, win{string(it.Key()), it.Window().UnixMilli(), string(it.Value())})
		require.NoError(t, s.Put(it.Key(), it.Window(), nil))
		require.NoError(t, s.Put(it.Key(), it.Window().Add(time.Hour), []byte("later")))
		require.NoError(t, s.ExpireBefore(it.Window()))
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	require.Equal(t, want, got)
	_, ok, _ := s.Get([]byte("k"), ms(0))
	require.False(t, ok)
	require.Len(t, drainWindows(t, must(s.FetchAll(ms(0), ms(1e9)))), 3000)
}

func TestWindowCopies(t *testing.T) {
	s := NewInMemoryWindow("w")
	k, v := []byte("key"), []byte("val")
	require.NoError(t, s.Put(k, ms(1), v))
	k[0], v[0] = 'X', 'X'
	got, ok, err := s.Get([]byte("key"), ms(1))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []byte("val"), got)
	got[0] = 'Y'

	it, err := s.Fetch([]byte("key"), ms(0), ms(2))
	require.NoError(t, err)
	require.True(t, it.Next())
	it.Key()[0], it.Value()[0] = 'Z', 'Z'
	require.NoError(t, it.Close())

	key := []byte("key")
	it, err = s.Fetch(key, ms(0), ms(2))
	require.NoError(t, err)
	key[0] = 'Q' // the key of an open Fetch may be reused
	require.Equal(t, []win{{"key", 1, "val"}}, drainWindows(t, it))
}

func TestWindowIteratorLifecycle(t *testing.T) {
	s := newFilledWindow(t, win{"a", 1, "x"})
	it, err := s.FetchAll(ms(0), ms(10))
	require.NoError(t, err)
	require.Nil(t, it.Key())
	require.Nil(t, it.Value())
	require.True(t, it.Window().IsZero())
	require.True(t, it.Next())
	require.NoError(t, it.Close())
	require.NoError(t, it.Close())
	require.False(t, it.Next())
	require.ErrorIs(t, it.Err(), ErrClosed)
}

func TestWindowClose(t *testing.T) {
	s := newFilledWindow(t, win{"a", 1, "x"}, win{"a", 2, "y"})
	open, err := s.Fetch([]byte("a"), ms(0), ms(10))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	require.False(t, open.Next())
	require.ErrorIs(t, open.Err(), ErrClosed)

	require.ErrorIs(t, s.Put([]byte("a"), ms(1), []byte("x")), ErrClosed)
	require.ErrorIs(t, s.Put([]byte("a"), ms(1), nil), ErrClosed)
	_, _, err = s.Get([]byte("a"), ms(1))
	require.ErrorIs(t, err, ErrClosed)
	_, err = s.Fetch([]byte("a"), ms(0), ms(1))
	require.ErrorIs(t, err, ErrClosed)
	_, err = s.FetchAll(ms(0), ms(1))
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, s.ExpireBefore(ms(1)), ErrClosed)
}

// TestWindowFetchAgainstModel compares Fetch and FetchAll with a brute-force
// filter over random windows, with keys that are prefixes of each other.
func TestWindowFetchAgainstModel(t *testing.T) {
	keys := []string{"", "a", "a\x00", "a\x00\x00", "ab", "b", "\xff"}
	r := rand.New(rand.NewPCG(3, 4))
	s := NewInMemoryWindow("w")
	model := map[win]bool{}
	for range 2000 {
		e := win{keys[r.IntN(len(keys))], r.Int64N(200) - 20, ""}
		if r.IntN(4) == 0 {
			require.NoError(t, s.Put([]byte(e.k), ms(e.start), nil))
			delete(model, e)
			continue
		}
		require.NoError(t, s.Put([]byte(e.k), ms(e.start), []byte{}))
		model[e] = true
	}
	for range 300 {
		from := r.Int64N(240) - 30
		to := from + r.Int64N(60) - 5
		var want []win
		for e := range model {
			if e.start >= from && e.start <= to {
				want = append(want, e)
			}
		}
		slices.SortFunc(want, func(a, b win) int {
			return cmp.Or(strings.Compare(a.k, b.k), cmp.Compare(a.start, b.start))
		})
		require.Equal(t, want, drainWindows(t, must(s.FetchAll(ms(from), ms(to)))), "FetchAll(%d, %d)", from, to)

		key := keys[r.IntN(len(keys))]
		want = slices.DeleteFunc(want, func(e win) bool { return e.k != key })
		if len(want) == 0 {
			want = nil
		}
		require.Equal(t, want, drainWindows(t, must(s.Fetch([]byte(key), ms(from), ms(to)))), "Fetch(%q, %d, %d)", key, from, to)
	}
}
