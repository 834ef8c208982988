package badgerstore_test

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/statestore"
)

func fillWindows(t *testing.T, s statestore.WindowStore, entries ...win) {
	t.Helper()
	for _, e := range entries {
		require.NoError(t, s.Put([]byte(e.k), ms(e.start), []byte(e.v)))
	}
}

func fetch(t *testing.T, s statestore.WindowStore, key string, from, to int64) []win {
	t.Helper()
	it, err := s.Fetch([]byte(key), ms(from), ms(to))
	require.NoError(t, err)
	return drainWindows(t, it)
}

func fetchAll(t *testing.T, s statestore.WindowStore, from, to int64) []win {
	t.Helper()
	it, err := s.FetchAll(ms(from), ms(to))
	require.NoError(t, err)
	return drainWindows(t, it)
}

var windowContracts = []contract{
	{"GetPutDelete", func(t *testing.T, o opener) {
		s := o.window()
		_, ok, err := s.Get([]byte("a"), ms(10))
		require.NoError(t, err)
		require.False(t, ok)
		require.NoError(t, s.Put([]byte("a"), ms(10), []byte("x")))
		require.NoError(t, s.Put([]byte("a"), ms(10), []byte("y")))
		v, ok, err := s.Get([]byte("a"), ms(10))
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, "y", string(v))
		require.NoError(t, s.Put([]byte("a"), ms(10), nil))
		_, ok, err = s.Get([]byte("a"), ms(10))
		require.NoError(t, err)
		require.False(t, ok, "a nil value deletes")

		// Milliseconds: sub-millisecond parts are dropped.
		require.NoError(t, s.Put([]byte("m"), ms(5).Add(999*time.Microsecond), []byte{}))
		v, ok, err = s.Get([]byte("m"), ms(5))
		require.NoError(t, err)
		require.True(t, ok)
		require.NotNil(t, v, "an empty value is a value")
		require.Equal(t, []win{{"m", 5, ""}}, fetch(t, s, "m", 0, 10))
	}},
	{"Fetch", func(t *testing.T, o opener) {
		s := o.window()
		fillWindows(t, s, win{"a", 10, "a10"}, win{"a", 20, "a20"}, win{"a", 30, "a30"},
			win{"a\x00", 15, "z15"}, win{"ab", 20, "ab20"}, win{"", 20, "e20"})
		require.Equal(t, []win{{"a", 10, "a10"}, {"a", 20, "a20"}, {"a", 30, "a30"}}, fetch(t, s, "a", 0, 100))
		require.Equal(t, []win{{"a", 20, "a20"}}, fetch(t, s, "a", 11, 29))
		require.Equal(t, []win{{"a", 10, "a10"}, {"a", 20, "a20"}}, fetch(t, s, "a", 10, 20), "bounds are inclusive")
		require.Empty(t, fetch(t, s, "a", 20, 10), "from after to")
		require.Equal(t, []win{{"a\x00", 15, "z15"}}, fetch(t, s, "a\x00", 0, 100))
		require.Equal(t, []win{{"", 20, "e20"}}, fetch(t, s, "", 0, 100))
		require.Empty(t, fetch(t, s, "b", 0, 100))
	}},
	{"FetchAll", func(t *testing.T, o opener) {
		s := o.window()
		fillWindows(t, s, win{"b", 10, "b10"}, win{"a", 30, "a30"}, win{"a", 10, "a10"},
			win{"ab", 20, "ab20"}, win{"a\x00", 5, "z5"}, win{"c", 40, "c40"})
		require.Equal(t, []win{{"a", 10, "a10"}, {"a", 30, "a30"}, {"a\x00", 5, "z5"}, {"ab", 20, "ab20"},
			{"b", 10, "b10"}, {"c", 40, "c40"}}, fetchAll(t, s, 0, 100), "by key, then start")
		require.Equal(t, []win{{"a", 10, "a10"}, {"ab", 20, "ab20"}, {"b", 10, "b10"}}, fetchAll(t, s, 10, 20))
		require.Empty(t, fetchAll(t, s, 41, 100))
		require.Empty(t, fetchAll(t, s, 20, 10), "from after to")
	}},
	{"NegativeTimes", func(t *testing.T, o opener) {
		// Times before the Unix epoch sort before the ones after it, as
		// time order says.
		s := o.window()
		fillWindows(t, s, win{"k", 5, "pos"}, win{"k", -5, "neg"}, win{"k", 0, "zero"})
		require.Equal(t, []win{{"k", -5, "neg"}, {"k", 0, "zero"}, {"k", 5, "pos"}}, fetch(t, s, "k", -10, 10))
		require.Equal(t, []win{{"k", -5, "neg"}, {"k", 0, "zero"}}, fetchAll(t, s, -10, 0))
		require.NoError(t, s.ExpireBefore(ms(0)))
		require.Equal(t, []win{{"k", 0, "zero"}, {"k", 5, "pos"}}, fetchAll(t, s, -10, 10))
	}},
	{"ExpireBefore", func(t *testing.T, o opener) {
		s := o.window()
		fillWindows(t, s, win{"a", 10, "x"}, win{"b", 20, "x"}, win{"a", 30, "x"}, win{"c", 5, "x"})
		require.NoError(t, s.Put([]byte("b"), ms(20), []byte("y"))) // overwritten
		require.NoError(t, s.Put([]byte("c"), ms(5), nil))          // deleted
		require.NoError(t, s.ExpireBefore(ms(20)))
		require.Equal(t, []win{{"a", 30, "x"}, {"b", 20, "y"}}, fetchAll(t, s, 0, 100))
		require.NoError(t, s.ExpireBefore(ms(20)), "again")
		require.NoError(t, s.ExpireBefore(ms(1000)))
		require.Empty(t, fetchAll(t, s, 0, 100))
		// Expired windows may be written again.
		require.NoError(t, s.Put([]byte("a"), ms(10), []byte("again")))
		require.Equal(t, []win{{"a", 10, "again"}}, fetchAll(t, s, 0, 100))
	}},
	{"IterateWhileWriting", func(t *testing.T, o opener) {
		s := o.window()
		fillWindows(t, s, win{"a", 1, "x"}, win{"a", 2, "y"}, win{"b", 1, "z"})
		it, err := s.FetchAll(ms(0), ms(10))
		require.NoError(t, err)
		var seen []win
		for it.Next() {
			seen = append(seen, win{string(it.Key()), it.Window().UnixMilli(), string(it.Value())})
			require.NoError(t, s.Put(it.Key(), it.Window(), nil))
			require.NoError(t, s.Put(it.Key(), ms(it.Window().UnixMilli()+1), []byte("n")))
			require.NoError(t, s.ExpireBefore(ms(2)))
		}
		require.NoError(t, it.Err())
		require.NoError(t, it.Close())
		require.Equal(t, []win{{"a", 1, "x"}, {"a", 2, "y"}, {"b", 1, "z"}}, seen)
		require.Equal(t, []win{{"a", 3, "n"}, {"b", 2, "n"}}, fetchAll(t, s, 0, 10))
	}},
	{"Copies", func(t *testing.T, o opener) {
		s := o.window()
		k, v := []byte("k"), []byte("v")
		require.NoError(t, s.Put(k, ms(1), v))
		k[0], v[0] = 'X', 'X'
		it, err := s.Fetch([]byte("k"), ms(0), ms(10))
		require.NoError(t, err)
		require.True(t, it.Next())
		it.Key()[0] = 'Q'
		it.Value()[0] = 'Q'
		require.NoError(t, it.Close())
		require.Equal(t, []win{{"k", 1, "v"}}, fetchAll(t, s, 0, 10))
	}},
	{"Lifecycle", func(t *testing.T, o opener) {
		s := o.window()
		fillWindows(t, s, win{"a", 1, "x"}, win{"a", 2, "y"})
		it, err := s.FetchAll(ms(0), ms(10))
		require.NoError(t, err)
		require.Nil(t, it.Key())
		require.Nil(t, it.Value())
		require.True(t, it.Window().IsZero())
		require.True(t, it.Next())
		require.NoError(t, it.Close())
		require.NoError(t, it.Close())
		require.False(t, it.Next())
		require.ErrorIs(t, it.Err(), statestore.ErrClosed)

		open, err := s.Fetch([]byte("a"), ms(0), ms(10))
		require.NoError(t, err)
		require.NoError(t, s.Close())
		require.NoError(t, s.Close())
		require.False(t, open.Next())
		require.ErrorIs(t, open.Err(), statestore.ErrClosed)
		require.NoError(t, open.Close())
		require.ErrorIs(t, s.Put([]byte("a"), ms(1), []byte("x")), statestore.ErrClosed)
		require.ErrorIs(t, s.Put([]byte("a"), ms(1), nil), statestore.ErrClosed)
		_, _, err = s.Get([]byte("a"), ms(1))
		require.ErrorIs(t, err, statestore.ErrClosed)
		_, err = s.Fetch([]byte("a"), ms(0), ms(1))
		require.ErrorIs(t, err, statestore.ErrClosed)
		_, err = s.FetchAll(ms(0), ms(1))
		require.ErrorIs(t, err, statestore.ErrClosed)
		require.ErrorIs(t, s.ExpireBefore(ms(1)), statestore.ErrClosed)
	}},
	{"Model", func(t *testing.T, o opener) {
		s := o.window()
		r := rand.New(rand.NewPCG(3, 4))
		keys := []string{"", "a", "a\x00", "ab", "b", "\xff"}
		type id struct {
			k     string
			start int64
		}
		model := map[id]string{}
		want := func(key *string, from, to int64) []win {
			var out []win
			for i, v := range model {
				if (key == nil || i.k == *key) && i.start >= from && i.start <= to {
					out = append(out, win{i.k, i.start, v})
				}
			}
			slices.SortFunc(out, func(a, b win) int {
				return cmp.Or(strings.Compare(a.k, b.k), cmp.Compare(a.start, b.start))
			})
			return out
		}
		for step := range 1500 {
			k, start := keys[r.IntN(len(keys))], int64(r.IntN(60)-10)
			switch op := r.IntN(20); {
			case op < 8:
				v := string(rune('a' + r.IntN(26)))
				require.NoError(t, s.Put([]byte(k), ms(start), []byte(v)))
				model[id{k, start}] = v
			case op < 11:
				require.NoError(t, s.Put([]byte(k), ms(start), nil))
				delete(model, id{k, start})
			case op < 12:
				cutoff := int64(r.IntN(40) - 10)
				require.NoError(t, s.ExpireBefore(ms(cutoff)))
				for i := range model {
					if i.start < cutoff {
						delete(model, i)
					}
				}
			case op < 16:
				to := start + int64(r.IntN(30)) - 5
				require.Equal(t, want(&k, start, to), fetch(t, s, k, start, to), "step %d", step)
			default:
				to := start + int64(r.IntN(30)) - 5
				require.Equal(t, want(nil, start, to), fetchAll(t, s, start, to), "step %d", step)
			}
		}
	}},
}
