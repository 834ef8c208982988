package badgerstore_test

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/statestore"
)

func fillSessions(t *testing.T, s statestore.SessionStore, entries ...sess) {
	t.Helper()
	for _, e := range entries {
		require.NoError(t, s.Put([]byte(e.k), ms(e.start), ms(e.end), []byte(e.v)))
	}
}

func find(t *testing.T, s statestore.SessionStore, key string, earliestEnd, latestStart int64) []sess {
	t.Helper()
	it, err := s.FindSessions([]byte(key), ms(earliestEnd), ms(latestStart))
	require.NoError(t, err)
	return drainSessions(t, it)
}

const forever = int64(1) << 50

var sessionContracts = []contract{
	{"FindSessions", func(t *testing.T, o opener) {
		s := o.session()
		fillSessions(t, s, sess{"a", 0, 10, "a0"}, sess{"a", 20, 30, "a20"}, sess{"a", 5, 40, "a5"},
			sess{"a", 20, 25, "a20s"}, sess{"a\x00", 0, 100, "z"}, sess{"ab", 0, 100, "ab"}, sess{"", 1, 2, "e"})
		// Ordered by start, then end — not by end as the changelog key
		// layout would order them.
		require.Equal(t, []sess{{"a", 0, 10, "a0"}, {"a", 5, 40, "a5"}, {"a", 20, 25, "a20s"}, {"a", 20, 30, "a20"}},
			find(t, s, "a", -forever, forever))
		require.Equal(t, []sess{{"a", 5, 40, "a5"}, {"a", 20, 25, "a20s"}, {"a", 20, 30, "a20"}}, find(t, s, "a", 11, 20))
		require.Equal(t, []sess{{"a", 0, 10, "a0"}, {"a", 5, 40, "a5"}}, find(t, s, "a", 10, 19))
		require.Equal(t, []sess{{"a", 5, 40, "a5"}}, find(t, s, "a", 31, 35))
		require.Empty(t, find(t, s, "a", 41, 100))
		require.Equal(t, []sess{{"a\x00", 0, 100, "z"}}, find(t, s, "a\x00", 0, 0))
		require.Equal(t, []sess{{"", 1, 2, "e"}}, find(t, s, "", 0, 10))
		require.Empty(t, find(t, s, "b", -forever, forever))
	}},
	{"PutRemove", func(t *testing.T, o opener) {
		s := o.session()
		require.NoError(t, s.Put([]byte("k"), ms(1), ms(1), []byte("point")))
		err := s.Put([]byte("k"), ms(2), ms(1), []byte("x"))
		require.ErrorIs(t, err, statestore.ErrInvalidSession)
		require.NoError(t, s.Put([]byte("k"), ms(5), ms(9), []byte{}))
		require.NoError(t, s.Put([]byte("k"), ms(5), ms(9), []byte("v2")))
		require.Equal(t, []sess{{"k", 1, 1, "point"}, {"k", 5, 9, "v2"}}, find(t, s, "k", -forever, forever))
		require.NoError(t, s.Remove([]byte("k"), ms(1), ms(1)))
		require.NoError(t, s.Remove([]byte("k"), ms(1), ms(1)), "removing a missing session")
		require.NoError(t, s.Put([]byte("k"), ms(5), ms(9), nil))
		require.Empty(t, find(t, s, "k", -forever, forever))

		require.NoError(t, s.Put([]byte("m"), ms(1).Add(time.Microsecond), ms(2).Add(999*time.Microsecond), []byte("x")))
		require.Equal(t, []sess{{"m", 1, 2, "x"}}, find(t, s, "m", -forever, forever), "milliseconds")
		require.NoError(t, s.Put([]byte("n"), ms(-20), ms(-10), []byte("neg")))
		require.NoError(t, s.Put([]byte("n"), ms(-5), ms(5), []byte("across")))
		require.Equal(t, []sess{{"n", -20, -10, "neg"}, {"n", -5, 5, "across"}}, find(t, s, "n", -forever, forever))
	}},
	{"ExpireBefore", func(t *testing.T, o opener) {
		s := o.session()
		fillSessions(t, s, sess{"a", 0, 10, "x"}, sess{"a", 15, 20, "x"}, sess{"b", 0, 30, "x"}, sess{"c", -10, -5, "x"})
		require.NoError(t, s.Put([]byte("a"), ms(15), ms(20), []byte("y")))
		require.NoError(t, s.ExpireBefore(ms(20)))
		require.Equal(t, []sess{{"a", 15, 20, "y"}}, find(t, s, "a", -forever, forever))
		require.Len(t, find(t, s, "b", -forever, forever), 1)
		require.Empty(t, find(t, s, "c", -forever, forever))
		require.NoError(t, s.ExpireBefore(ms(31)))
		require.Empty(t, find(t, s, "a", -forever, forever))
		require.Empty(t, find(t, s, "b", -forever, forever))
	}},
	{"MergeWhileIterating", func(t *testing.T, o opener) {
		s := o.session()
		fillSessions(t, s, sess{"k", 0, 10, "1"}, sess{"k", 20, 30, "2"}, sess{"k", 50, 60, "3"})
		at, gap := int64(15), int64(10)
		it, err := s.FindSessions([]byte("k"), ms(at-gap), ms(at+gap))
		require.NoError(t, err)
		start, end, merged := at, at, ""
		for it.Next() {
			start, end = min(start, it.Start().UnixMilli()), max(end, it.End().UnixMilli())
			merged += string(it.Value())
			require.NoError(t, s.Remove(it.Key(), it.Start(), it.End()))
		}
		require.NoError(t, it.Err())
		require.NoError(t, it.Close())
		require.NoError(t, s.Put([]byte("k"), ms(start), ms(end), []byte(merged)))
		require.Equal(t, []sess{{"k", 0, 30, "12"}, {"k", 50, 60, "3"}}, find(t, s, "k", -forever, forever))
	}},
	{"Copies", func(t *testing.T, o opener) {
		s := o.session()
		k, v := []byte("k"), []byte("v")
		require.NoError(t, s.Put(k, ms(1), ms(2), v))
		k[0], v[0] = 'X', 'X'
		it, err := s.FindSessions([]byte("k"), ms(0), ms(10))
		require.NoError(t, err)
		require.True(t, it.Next())
		it.Key()[0], it.Value()[0] = 'Q', 'Q'
		require.NoError(t, it.Close())
		require.Equal(t, []sess{{"k", 1, 2, "v"}}, find(t, s, "k", 0, 10))
	}},
	{"Lifecycle", func(t *testing.T, o opener) {
		s := o.session()
		fillSessions(t, s, sess{"k", 1, 2, "x"})
		it, err := s.FindSessions([]byte("k"), ms(0), ms(10))
		require.NoError(t, err)
		require.Nil(t, it.Key())
		require.True(t, it.Start().IsZero())
		require.True(t, it.End().IsZero())
		require.True(t, it.Next())
		require.False(t, it.Next())
		require.NoError(t, it.Err())
		require.NoError(t, it.Close())

		open, err := s.FindSessions([]byte("k"), ms(0), ms(10))
		require.NoError(t, err)
		require.NoError(t, s.Close())
		require.NoError(t, s.Close())
		require.False(t, open.Next())
		require.ErrorIs(t, open.Err(), statestore.ErrClosed)
		require.NoError(t, open.Close())
		require.ErrorIs(t, s.Put([]byte("a"), ms(1), ms(2), []byte("x")), statestore.ErrClosed)
		require.ErrorIs(t, s.Remove([]byte("a"), ms(1), ms(2)), statestore.ErrClosed)
		_, err = s.FindSessions([]byte("a"), ms(0), ms(1))
		require.ErrorIs(t, err, statestore.ErrClosed)
		require.ErrorIs(t, s.ExpireBefore(ms(1)), statestore.ErrClosed)
	}},
	{"Model", func(t *testing.T, o opener) {
		s := o.session()
		r := rand.New(rand.NewPCG(5, 6))
		keys := []string{"", "a", "a\x00", "ab", "b"}
		type id struct {
			k          string
			start, end int64
		}
		model := map[id]string{}
		for step := range 1500 {
			k, start := keys[r.IntN(len(keys))], int64(r.IntN(60)-10)
			end := start + int64(r.IntN(15))
			switch op := r.IntN(20); {
			case op < 8:
				v := string(rune('a' + r.IntN(26)))
				require.NoError(t, s.Put([]byte(k), ms(start), ms(end), []byte(v)))
				model[id{k, start, end}] = v
			case op < 11:
				require.NoError(t, s.Remove([]byte(k), ms(start), ms(end)))
				delete(model, id{k, start, end})
			case op < 12:
				cutoff := int64(r.IntN(50) - 10)
				require.NoError(t, s.ExpireBefore(ms(cutoff)))
				for i := range model {
					if i.end < cutoff {
						delete(model, i)
					}
				}
			default:
				earliestEnd, latestStart := int64(r.IntN(70)-10), int64(r.IntN(70)-10)
				var want []sess
				for i, v := range model {
					if i.k == k && i.end >= earliestEnd && i.start <= latestStart {
						want = append(want, sess{i.k, i.start, i.end, v})
					}
				}
				slices.SortFunc(want, func(a, b sess) int {
					return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.end, b.end))
				})
				require.Equal(t, want, find(t, s, k, earliestEnd, latestStart), "step %d", step)
			}
		}
	}},
}
