package statestore

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func newStagedWin(t *testing.T, entries ...win) *StagedWindow {
	t.Helper()
	s, err := NewStagedWindow(newFilledWindow(t, entries...), 1<<20)
	require.NoError(t, err)
	return s
}

func fetchAll(t *testing.T, s WindowStore, from, to int64) []win {
	t.Helper()
	it, err := s.FetchAll(ms(from), ms(to))
	require.NoError(t, err)
	return drainWindows(t, it)
}

func TestStagedWindowReadYourWrites(t *testing.T) {
	s := newStagedWin(t, win{"a", 10, "a10"}, win{"a", 20, "a20"}, win{"a", 30, "a30"}, win{"b", 10, "b10"})

	require.NoError(t, s.Put([]byte("a"), ms(15), []byte("s15")))
	require.NoError(t, s.Put([]byte("a"), ms(20), []byte("s20")))
	require.NoError(t, s.Put([]byte("a"), ms(30), nil)) // delete
	require.NoError(t, s.Put([]byte("ab"), ms(5), []byte("ab5")))

	v, ok, err := s.Get([]byte("a"), ms(20))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "s20", string(v))
	_, ok, err = s.Get([]byte("a"), ms(30))
	require.NoError(t, err)
	require.False(t, ok)
	v, ok, err = s.Get([]byte("b"), ms(10))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "b10", string(v))

	it, err := s.Fetch([]byte("a"), ms(0), ms(100))
	require.NoError(t, err)
	require.Equal(t, []win{{"a", 10, "a10"}, {"a", 15, "s15"}, {"a", 20, "s20"}}, drainWindows(t, it))
	it, err = s.Fetch([]byte("a"), ms(15), ms(20))
	require.NoError(t, err)
	require.Equal(t, []win{{"a", 15, "s15"}, {"a", 20, "s20"}}, drainWindows(t, it))
	it, err = s.Fetch([]byte("a"), ms(20), ms(10))
	require.NoError(t, err)
	require.Empty(t, drainWindows(t, it), "from after to")

	require.Equal(t, []win{{"a", 10, "a10"}, {"a", 15, "s15"}, {"a", 20, "s20"}, {"ab", 5, "ab5"}, {"b", 10, "b10"}},
		fetchAll(t, s, 0, 100))
	require.Equal(t, []win{{"a", 10, "a10"}, {"b", 10, "b10"}}, fetchAll(t, s, 10, 10))
	require.Equal(t, []win{{"a", 15, "s15"}, {"a", 20, "s20"}}, fetchAll(t, s, 11, 29))

	// The base is untouched until Commit.
	require.Equal(t, []win{{"a", 10, "a10"}, {"a", 20, "a20"}, {"a", 30, "a30"}, {"b", 10, "b10"}},
		fetchAll(t, s.Base(), 0, 100))
	require.NoError(t, s.Commit())
	require.Equal(t, fetchAll(t, s, 0, 100), fetchAll(t, s.Base(), 0, 100))
	require.Zero(t, s.StagedBytes())
}

func TestStagedWindowExpire(t *testing.T) {
	s := newStagedWin(t, win{"a", 10, "a10"}, win{"a", 20, "a20"}, win{"b", 15, "b15"}, win{"b", 30, "b30"})
	require.NoError(t, s.Put([]byte("a"), ms(5), []byte("s5")))
	require.NoError(t, s.Put([]byte("c"), ms(25), []byte("c25")))
	require.EqualValues(t, (1+8+2)+(1+8+3), s.StagedBytes())

	require.NoError(t, s.ExpireBefore(ms(20)))
	require.EqualValues(t, 1+8+3, s.StagedBytes(), "the expired staged window is dropped")
	require.NoError(t, s.ExpireBefore(ms(12)), "an earlier cutoff changes nothing")
	// A window written after the expiry is kept, as the base would keep it.
	require.NoError(t, s.Put([]byte("b"), ms(15), []byte("late")))

	want := []win{{"a", 20, "a20"}, {"b", 15, "late"}, {"b", 30, "b30"}, {"c", 25, "c25"}}
	require.Equal(t, want, fetchAll(t, s, 0, 100))
	_, ok, err := s.Get([]byte("a"), ms(10))
	require.NoError(t, err)
	require.False(t, ok, "hidden by the cutoff")
	it, err := s.Fetch([]byte("a"), ms(0), ms(100))
	require.NoError(t, err)
	require.Equal(t, want[:1], drainWindows(t, it))

	changes, err := s.Changes()
	require.NoError(t, err)
	require.ElementsMatch(t, []Change{
		{Key: EncodeWindowKey([]byte("b"), ms(15)), Value: []byte("late")},
		{Key: EncodeWindowKey([]byte("c"), ms(25)), Value: []byte("c25")},
		{Key: EncodeWindowKey([]byte("a"), ms(10))}, // listed through FetchAll
	}, changes)

	// Applying Changes to a copy of the base, as an engine does with
	// Badger, gives what Commit gives.
	other := newFilledWindow(t, win{"a", 10, "a10"}, win{"a", 20, "a20"}, win{"b", 15, "b15"}, win{"b", 30, "b30"})
	for _, c := range changes {
		key, start, err := DecodeWindowKey(c.Key)
		require.NoError(t, err)
		require.NoError(t, other.Put(key, start, c.Value))
	}
	require.NoError(t, s.Commit())
	require.Equal(t, want, fetchAll(t, s.Base(), 0, 100))
	require.Equal(t, want, fetchAll(t, other, 0, 100))

	// Reset brings back what a staged expiry hid.
	require.NoError(t, s.ExpireBefore(ms(100)))
	require.Empty(t, fetchAll(t, s, 0, 100))
	s.Reset()
	require.Equal(t, want, fetchAll(t, s, 0, 100))
}

func TestStagedWindowLimitAndClose(t *testing.T) {
	s, err := NewStagedWindow(NewInMemoryWindow("w"), 20)
	require.NoError(t, err)
	require.NoError(t, s.Put([]byte("k"), ms(1), []byte("0123456789"))) // 19
	err = s.Put([]byte("k"), ms(2), nil)
	require.ErrorIs(t, err, ErrStagingFull)
	var full *StagingFullError
	require.True(t, errors.As(err, &full))
	require.EqualValues(t, 9, full.Write)

	open, err := s.FetchAll(ms(0), ms(10))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	require.False(t, open.Next())
	require.ErrorIs(t, open.Err(), ErrClosed)
	require.ErrorIs(t, s.Put([]byte("a"), ms(1), []byte("x")), ErrClosed)
	_, _, err = s.Get([]byte("a"), ms(1))
	require.ErrorIs(t, err, ErrClosed)
	_, err = s.Fetch([]byte("a"), ms(0), ms(1))
	require.ErrorIs(t, err, ErrClosed)
	_, err = s.FetchAll(ms(0), ms(1))
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, s.ExpireBefore(ms(1)), ErrClosed)
	_, err = s.Changes()
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, s.Commit(), ErrClosed)
}

func TestStagedWindowIteratorSnapshot(t *testing.T) {
	s := newStagedWin(t, win{"a", 1, "x"}, win{"a", 2, "y"})
	it, err := s.Fetch([]byte("a"), ms(0), ms(10))
	require.NoError(t, err)
	require.NoError(t, s.Put([]byte("a"), ms(3), []byte("z")))
	require.NoError(t, s.ExpireBefore(ms(2)))
	require.Equal(t, []win{{"a", 1, "x"}, {"a", 2, "y"}}, drainWindows(t, it))
	it, err = s.Fetch([]byte("a"), ms(0), ms(10))
	require.NoError(t, err)
	require.Equal(t, []win{{"a", 2, "y"}, {"a", 3, "z"}}, drainWindows(t, it))
}
