package statestore

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sess is a session entry as tests write them; times in milliseconds.
type sess struct {
	k          string
	start, end int64
	v          string
}

// drainSessions reads it to the end, closes it and returns what it yielded.
func drainSessions(t *testing.T, it SessionIterator) []sess {
	t.Helper()
	var out []sess
	for it.Next() {
		out = append(out, sess{string(it.Key()), it.Start().UnixMilli(), it.End().UnixMilli(), string(it.Value())})
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	return out
}

func newFilledSession(t *testing.T, entries ...sess) SessionStore {
	t.Helper()
	s := NewInMemorySession("sessions")
	for _, e := range entries {
		require.NoError(t, s.Put([]byte(e.k), ms(e.start), ms(e.end), []byte(e.v)))
	}
	return s
}

func allSessions(t *testing.T, s SessionStore, key string) []sess {
	t.Helper()
	it, err := s.FindSessions([]byte(key), time.UnixMilli(-1e15), time.UnixMilli(1e15))
	require.NoError(t, err)
	return drainSessions(t, it)
}

func TestSessionFindSessions(t *testing.T) {
	s := newFilledSession(t,
		sess{"a", 100, 200, "a1"}, sess{"a", 0, 50, "a0"}, sess{"a", 300, 300, "a2"}, sess{"a", 400, 500, "a3"},
		sess{"ab", 100, 200, "ab"}, sess{"", 100, 200, "e"}, sess{"b", 100, 200, "b"},
	)
	tests := []struct {
		name                     string
		key                      string
		earliestEnd, latestStart int64
		want                     []sess
	}{
		{"all, by start", "a", -1000, 1000, []sess{{"a", 0, 50, "a0"}, {"a", 100, 200, "a1"}, {"a", 300, 300, "a2"}, {"a", 400, 500, "a3"}}},
		{"merge window around 250", "a", 250 - 60, 250 + 60, []sess{{"a", 100, 200, "a1"}, {"a", 300, 300, "a2"}}},
		{"end bound inclusive", "a", 200, 200, []sess{{"a", 100, 200, "a1"}}},
		{"start bound inclusive", "a", 300, 300, []sess{{"a", 300, 300, "a2"}}},
		{"inside a session", "a", 450, 450, []sess{{"a", 400, 500, "a3"}}},
		{"gap between sessions", "a", 201, 299, nil},
		{"after all", "a", 501, 1000, nil},
		{"before all", "a", -100, -1, nil},
		{"a prefix of another key", "ab", 0, 1000, []sess{{"ab", 100, 200, "ab"}}},
		{"empty key", "", 0, 1000, []sess{{"", 100, 200, "e"}}},
		{"missing key", "c", 0, 1000, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it, err := s.FindSessions([]byte(tt.key), ms(tt.earliestEnd), ms(tt.latestStart))
			require.NoError(t, err)
			require.Equal(t, tt.want, drainSessions(t, it))
		})
	}
}

func TestSessionPutRemove(t *testing.T) {
	s := NewInMemorySession("sessions")
	require.Equal(t, "sessions", s.Name())
	require.NoError(t, s.Put([]byte("a"), ms(10), ms(20), []byte("x")))
	require.NoError(t, s.Put([]byte("a"), ms(10), ms(20), []byte("y")), "overwrite")
	require.NoError(t, s.Put([]byte("a"), ms(10), ms(30), []byte("z")), "another end, another session")
	require.Equal(t, []sess{{"a", 10, 20, "y"}, {"a", 10, 30, "z"}}, allSessions(t, s, "a"))

	require.NoError(t, s.Remove([]byte("a"), ms(10), ms(20)))
	require.NoError(t, s.Remove([]byte("a"), ms(10), ms(20)), "removing a missing session")
	require.NoError(t, s.Put([]byte("a"), ms(10), ms(30), nil), "nil value removes")
	require.Empty(t, allSessions(t, s, "a"))

	// A point session is fine; an inverted one is not.
	require.NoError(t, s.Put([]byte("p"), ms(5), ms(5), []byte("p")))
	err := s.Put([]byte("bad"), ms(20), ms(10), []byte("x"))
	require.ErrorIs(t, err, ErrInvalidSession)
	require.Contains(t, err.Error(), "statestore: ")
	require.Empty(t, allSessions(t, s, "bad"))
	require.NoError(t, s.Put([]byte("bad"), ms(20), ms(10), nil), "removing an inverted session")

	// Milliseconds: sub-millisecond parts are dropped.
	start := time.UnixMilli(1000).Add(999 * time.Microsecond)
	require.NoError(t, s.Put([]byte("t"), start, start.Add(time.Millisecond), []byte("t")))
	got := allSessions(t, s, "t")
	require.Equal(t, []sess{{"t", 1000, 1001, "t"}}, got)
}

func TestSessionExpireBefore(t *testing.T) {
	s := newFilledSession(t,
		sess{"a", 0, 50, "a0"}, sess{"a", 100, 200, "a1"}, sess{"b", 10, 150, "b0"}, sess{"b", 300, 400, "b1"},
	)
	require.NoError(t, s.ExpireBefore(ms(150)))
	require.Equal(t, []sess{{"a", 100, 200, "a1"}}, allSessions(t, s, "a"))
	require.Equal(t, []sess{{"b", 10, 150, "b0"}, {"b", 300, 400, "b1"}}, allSessions(t, s, "b"), "end == cutoff stays")

	require.NoError(t, s.Put([]byte("b"), ms(10), ms(150), []byte("again")))
	require.NoError(t, s.Remove([]byte("a"), ms(100), ms(200)))
	require.NoError(t, s.ExpireBefore(ms(401)))
	require.Empty(t, allSessions(t, s, "a"))
	require.Empty(t, allSessions(t, s, "b"))
}

// TestSessionMergeWhileIterating does what a session aggregator does: find
// the sessions a record merges with, remove them and put the merged one,
// while the iterator is open.
func TestSessionMergeWhileIterating(t *testing.T) {
	s := newFilledSession(t, sess{"k", 0, 10, "1"}, sess{"k", 20, 30, "2"}, sess{"k", 100, 110, "3"})
	const gap = 10
	at := int64(15) // within the gap of the first two
	it, err := s.FindSessions([]byte("k"), ms(at-gap), ms(at+gap))
	require.NoError(t, err)
	start, end, merged := at, at, "x"
	for it.Next() {
		start = min(start, it.Start().UnixMilli())
		end = max(end, it.End().UnixMilli())
		merged += string(it.Value())
		require.NoError(t, s.Remove(it.Key(), it.Start(), it.End()))
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	require.NoError(t, s.Put([]byte("k"), ms(start), ms(end), []byte(merged)))
	require.Equal(t, []sess{{"k", 0, 30, "x12"}, {"k", 100, 110, "3"}}, allSessions(t, s, "k"))
}

func TestSessionCopies(t *testing.T) {
	s := NewInMemorySession("s")
	k, v := []byte("key"), []byte("val")
	require.NoError(t, s.Put(k, ms(1), ms(2), v))
	k[0], v[0] = 'X', 'X'
	key := []byte("key")
	it, err := s.FindSessions(key, ms(0), ms(10))
	require.NoError(t, err)
	key[0] = 'Q'
	require.True(t, it.Next())
	it.Key()[0], it.Value()[0] = 'Z', 'Z'
	require.NoError(t, it.Close())
	require.Equal(t, []sess{{"key", 1, 2, "val"}}, allSessions(t, s, "key"))
}

func TestSessionIteratorLifecycle(t *testing.T) {
	s := newFilledSession(t, sess{"a", 1, 2, "x"})
	it, err := s.FindSessions([]byte("a"), ms(0), ms(10))
	require.NoError(t, err)
	require.Nil(t, it.Key())
	require.Nil(t, it.Value())
	require.True(t, it.Start().IsZero())
	require.True(t, it.End().IsZero())
	require.True(t, it.Next())
	require.NoError(t, it.Close())
	require.NoError(t, it.Close())
	require.False(t, it.Next())
	require.ErrorIs(t, it.Err(), ErrClosed)
}

func TestSessionClose(t *testing.T) {
	s := newFilledSession(t, sess{"a", 1, 2, "x"})
	open, err := s.FindSessions([]byte("a"), ms(0), ms(10))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	require.False(t, open.Next())
	require.ErrorIs(t, open.Err(), ErrClosed)

	require.ErrorIs(t, s.Put([]byte("a"), ms(1), ms(2), []byte("x")), ErrClosed)
	require.ErrorIs(t, s.Put([]byte("a"), ms(1), ms(2), nil), ErrClosed)
	require.ErrorIs(t, s.Remove([]byte("a"), ms(1), ms(2)), ErrClosed)
	_, err = s.FindSessions([]byte("a"), ms(0), ms(1))
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, s.ExpireBefore(ms(1)), ErrClosed)
}

// TestFindSessionsAgainstModel compares FindSessions with a brute-force
// filter over random, possibly overlapping, sessions.
func TestFindSessionsAgainstModel(t *testing.T) {
	keys := []string{"", "a", "a\x00", "ab"}
	r := rand.New(rand.NewPCG(5, 6))
	s := NewInMemorySession("s")
	model := map[sess]bool{}
	for range 1500 {
		start := r.Int64N(300)
		e := sess{keys[r.IntN(len(keys))], start, start + r.Int64N(30), ""}
		if r.IntN(4) == 0 {
			require.NoError(t, s.Remove([]byte(e.k), ms(e.start), ms(e.end)))
			delete(model, e)
			continue
		}
		require.NoError(t, s.Put([]byte(e.k), ms(e.start), ms(e.end), []byte{}))
		model[e] = true
	}
	for range 300 {
		key := keys[r.IntN(len(keys))]
		earliestEnd := r.Int64N(340) - 20
		latestStart := earliestEnd + r.Int64N(80) - 10
		var want []sess
		for e := range model {
			if e.k == key && e.end >= earliestEnd && e.start <= latestStart {
				want = append(want, e)
			}
		}
		slices.SortFunc(want, func(a, b sess) int {
			return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.end, b.end))
		})
		it, err := s.FindSessions([]byte(key), ms(earliestEnd), ms(latestStart))
		require.NoError(t, err)
		require.Equal(t, want, drainSessions(t, it), "FindSessions(%q, %d, %d)", key, earliestEnd, latestStart)
	}
}
