package statestore

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func newStagedSess(t *testing.T, entries ...sess) *StagedSession {
	t.Helper()
	s, err := NewStagedSession(newFilledSession(t, entries...), 1<<20)
	require.NoError(t, err)
	return s
}

func TestStagedSessionReadYourWrites(t *testing.T) {
	s := newStagedSess(t, sess{"a", 0, 10, "a0"}, sess{"a", 20, 30, "a20"}, sess{"a", 50, 60, "a50"}, sess{"b", 0, 5, "b0"})

	// A session merge: find, remove the merged ones, put the result.
	it, err := s.FindSessions([]byte("a"), ms(15), ms(35))
	require.NoError(t, err)
	var found []sess
	for it.Next() {
		found = append(found, sess{string(it.Key()), it.Start().UnixMilli(), it.End().UnixMilli(), string(it.Value())})
		require.NoError(t, s.Remove(it.Key(), it.Start(), it.End()))
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	require.Equal(t, []sess{{"a", 20, 30, "a20"}}, found)
	require.NoError(t, s.Put([]byte("a"), ms(20), ms(35), []byte("merged")))
	require.NoError(t, s.Put([]byte("a"), ms(12), ms(12), []byte("point")))

	require.Equal(t, []sess{{"a", 0, 10, "a0"}, {"a", 12, 12, "point"}, {"a", 20, 35, "merged"}, {"a", 50, 60, "a50"}},
		allSessions(t, s, "a"))
	it, err = s.FindSessions([]byte("a"), ms(11), ms(20))
	require.NoError(t, err)
	require.Equal(t, []sess{{"a", 12, 12, "point"}, {"a", 20, 35, "merged"}}, drainSessions(t, it))
	require.Equal(t, []sess{{"a", 0, 10, "a0"}, {"a", 20, 30, "a20"}, {"a", 50, 60, "a50"}}, allSessions(t, s.Base(), "a"))

	err = s.Put([]byte("a"), ms(5), ms(4), []byte("x"))
	require.ErrorIs(t, err, ErrInvalidSession)
	require.NoError(t, s.Remove([]byte("a"), ms(5), ms(4)), "removing an inverted session is a no-op")

	changes, err := s.Changes()
	require.NoError(t, err)
	require.Len(t, changes, 4)
	require.NoError(t, s.Commit())
	require.Equal(t, []sess{{"a", 0, 10, "a0"}, {"a", 12, 12, "point"}, {"a", 20, 35, "merged"}, {"a", 50, 60, "a50"}},
		allSessions(t, s.Base(), "a"))
}

func TestStagedSessionExpire(t *testing.T) {
	s := newStagedSess(t, sess{"a", 0, 10, "a0"}, sess{"a", 20, 30, "a20"}, sess{"b", 0, 25, "b0"})
	require.NoError(t, s.Put([]byte("a"), ms(1), ms(2), []byte("s")))
	require.NoError(t, s.Put([]byte("c"), ms(40), ms(50), []byte("c")))
	require.NoError(t, s.ExpireBefore(ms(26)))
	require.EqualValues(t, 1+16+1, s.StagedBytes())
	require.NoError(t, s.Put([]byte("a"), ms(3), ms(4), []byte("late")))

	require.Equal(t, []sess{{"a", 3, 4, "late"}, {"a", 20, 30, "a20"}}, allSessions(t, s, "a"))
	require.Empty(t, allSessions(t, s, "b"))
	require.Equal(t, []sess{{"c", 40, 50, "c"}}, allSessions(t, s, "c"))

	// The in-memory base cannot list its expired sessions: Changes says so.
	_, err := s.Changes()
	require.ErrorIs(t, err, errors.ErrUnsupported)

	require.NoError(t, s.Commit())
	require.Equal(t, []sess{{"a", 3, 4, "late"}, {"a", 20, 30, "a20"}}, allSessions(t, s.Base(), "a"))
	require.Empty(t, allSessions(t, s.Base(), "b"))

	require.NoError(t, s.ExpireBefore(ms(1000)))
	require.Empty(t, allSessions(t, s, "a"))
	s.Reset()
	require.Len(t, allSessions(t, s, "a"), 2)
}

// scanningSessions gives the in-memory session store an ExpiryScanner over a
// list of keys, as the Badger store has one.
type scanningSessions struct {
	SessionStore
	keys []string
}

func (s scanningSessions) ScanExpired(cutoff time.Time) (Iterator, error) {
	out := NewInMemoryKeyValue("expired")
	for _, k := range s.keys {
		it, err := s.FindSessions([]byte(k), time.UnixMilli(-1e15), time.UnixMilli(1e15))
		if err != nil {
			return nil, err
		}
		for it.Next() {
			if it.End().Before(cutoff) {
				_ = out.Put(EncodeSessionKey(it.Key(), it.Start(), it.End()), []byte{})
			}
		}
		_ = it.Close()
	}
	return out.Range(nil, nil)
}

func TestStagedSessionChangesWithScanner(t *testing.T) {
	base := scanningSessions{newFilledSession(t, sess{"a", 0, 10, "a0"}, sess{"a", 20, 30, "a20"}, sess{"b", 0, 25, "b0"}), []string{"a", "b"}}
	s, err := NewStagedSession(base, 1<<20)
	require.NoError(t, err)
	require.NoError(t, s.ExpireBefore(ms(26)))
	require.NoError(t, s.Put([]byte("a"), ms(0), ms(10), []byte("rewritten")))
	changes, err := s.Changes()
	require.NoError(t, err)
	require.ElementsMatch(t, []Change{
		{Key: EncodeSessionKey([]byte("a"), ms(0), ms(10)), Value: []byte("rewritten")},
		{Key: EncodeSessionKey([]byte("b"), ms(0), ms(25))},
	}, changes)
}

func TestStagedSessionLimitAndClose(t *testing.T) {
	s, err := NewStagedSession(NewInMemorySession("s"), 18)
	require.NoError(t, err)
	require.NoError(t, s.Put([]byte("k"), ms(1), ms(2), []byte("v"))) // 18
	require.ErrorIs(t, s.Remove([]byte("j"), ms(1), ms(2)), ErrStagingFull)

	open, err := s.FindSessions([]byte("k"), ms(0), ms(10))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	require.False(t, open.Next())
	require.ErrorIs(t, open.Err(), ErrClosed)
	require.ErrorIs(t, s.Put([]byte("a"), ms(1), ms(2), []byte("x")), ErrClosed)
	require.ErrorIs(t, s.Remove([]byte("a"), ms(1), ms(2)), ErrClosed)
	_, err = s.FindSessions([]byte("a"), ms(0), ms(1))
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, s.ExpireBefore(ms(1)), ErrClosed)
	require.ErrorIs(t, s.Commit(), ErrClosed)
}
