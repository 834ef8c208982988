package statestore

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newStagedKV returns an overlay over an in-memory base holding keys.
func newStagedKV(t *testing.T, limit int64, keys ...string) *StagedKeyValue {
	t.Helper()
	s, err := NewStagedKeyValue(newFilledKV(t, keys...), limit)
	require.NoError(t, err)
	return s
}

func getKV(t *testing.T, s KeyValueStore, key string) (string, bool) {
	t.Helper()
	v, ok, err := s.Get([]byte(key))
	require.NoError(t, err)
	return string(v), ok
}

func rangeKV(t *testing.T, s KeyValueStore, from, to []byte) []kv {
	t.Helper()
	it, err := s.Range(from, to)
	require.NoError(t, err)
	return drainKV(t, it)
}

func TestStagedConstructors(t *testing.T) {
	_, err := NewStagedKeyValue(nil, 10)
	require.Error(t, err)
	_, err = NewStagedKeyValue(NewInMemoryKeyValue("kv"), 0)
	require.ErrorContains(t, err, "limit 0 bytes")
	_, err = NewStagedWindow(NewInMemoryWindow("w"), -1)
	require.Error(t, err)
	_, err = NewStagedSession(nil, 1)
	require.Error(t, err)

	for _, tt := range []struct {
		kind Kind
		base Store
	}{
		{KindKeyValue, NewInMemoryKeyValue("kv")},
		{KindWindow, NewInMemoryWindow("w")},
		{KindSession, NewInMemorySession("s")},
	} {
		st, err := NewStaged(tt.base, tt.kind, 1<<10)
		require.NoError(t, err)
		require.Equal(t, tt.kind, st.Kind())
		require.Equal(t, tt.base.Name(), st.Name())
	}
	_, err = NewStaged(NewInMemoryKeyValue("kv"), KindWindow, 1)
	require.ErrorContains(t, err, "is not a window store")
	_, err = NewStaged(NewInMemoryKeyValue("kv"), Kind(9), 1)
	require.ErrorContains(t, err, "unknown kind")
}

func TestStagedKeyValueReadYourWrites(t *testing.T) {
	s := newStagedKV(t, 1<<20, "a", "c", "e", "g")
	base := s.Base()

	require.NoError(t, s.Put([]byte("b"), []byte("staged-b"))) // new key
	require.NoError(t, s.Put([]byte("c"), []byte("staged-c"))) // overwrites the base
	require.NoError(t, s.Delete([]byte("e")))                  // hides the base
	require.NoError(t, s.Put([]byte("g"), nil))                // nil value = delete
	require.NoError(t, s.Delete([]byte("zz")))                 // missing: fine
	require.NoError(t, s.Put([]byte("h"), []byte{}))           // empty value is a value

	for _, tt := range []struct {
		key, want string
		ok        bool
	}{
		{"a", "va", true}, {"b", "staged-b", true}, {"c", "staged-c", true},
		{"e", "", false}, {"g", "", false}, {"h", "", true}, {"zz", "", false},
	} {
		got, ok := getKV(t, s, tt.key)
		require.Equal(t, tt.ok, ok, tt.key)
		require.Equal(t, tt.want, got, tt.key)
	}
	v, ok, err := s.Get([]byte("h"))
	require.NoError(t, err)
	require.True(t, ok)
	require.NotNil(t, v, "an empty value is not nil")

	// The base has only committed state.
	require.Equal(t, pairs("a", "c", "e", "g"), rangeKV(t, base, nil, nil))

	want := []kv{{"a", "va"}, {"b", "staged-b"}, {"c", "staged-c"}, {"h", ""}}
	require.Equal(t, want, rangeKV(t, s, nil, nil))
	require.Equal(t, want[1:3], rangeKV(t, s, []byte("b"), []byte("e")))
	require.Equal(t, want[1:], rangeKV(t, s, []byte("ab"), nil))
	require.Empty(t, rangeKV(t, s, []byte("e"), []byte("h")), "deletes hide the base")
	require.Empty(t, rangeKV(t, s, nil, []byte{}), "an empty, non-nil to is below every key")

	require.NoError(t, s.Put([]byte("ca"), []byte("x")))
	it, err := s.PrefixScan([]byte("c"))
	require.NoError(t, err)
	require.Equal(t, []kv{{"c", "staged-c"}, {"ca", "x"}}, drainKV(t, it))

	n, err := s.ApproximateNumEntries()
	require.NoError(t, err)
	require.EqualValues(t, 5, n, "4 base + 4 puts - 3 deletes")
}

func TestStagedKeyValueCommitResetChanges(t *testing.T) {
	s := newStagedKV(t, 1<<20, "a", "b")
	require.NoError(t, s.Put([]byte("a"), []byte("1")))
	require.NoError(t, s.Delete([]byte("b")))
	require.NoError(t, s.Put([]byte("c"), []byte("3")))

	changes, err := s.Changes()
	require.NoError(t, err)
	require.Equal(t, []Change{
		{Key: []byte("a"), Value: []byte("1")},
		{Key: []byte("b")},
		{Key: []byte("c"), Value: []byte("3")},
	}, changes)
	require.Nil(t, changes[1].Value, "a delete carries a nil value")

	// Abort: the staged writes go, the base is untouched.
	s.Reset()
	require.Zero(t, s.StagedBytes())
	require.Equal(t, pairs("a", "b"), rangeKV(t, s, nil, nil))
	changes, err = s.Changes()
	require.NoError(t, err)
	require.Empty(t, changes)

	// Commit: the base gets them.
	require.NoError(t, s.Put([]byte("a"), []byte("1")))
	require.NoError(t, s.Delete([]byte("b")))
	require.NoError(t, s.Put([]byte("c"), []byte("3")))
	require.NoError(t, s.Commit())
	require.Zero(t, s.StagedBytes())
	want := []kv{{"a", "1"}, {"c", "3"}}
	require.Equal(t, want, rangeKV(t, s.Base(), nil, nil))
	require.Equal(t, want, rangeKV(t, s, nil, nil))
}

func TestStagedKeyValueLimit(t *testing.T) {
	s := newStagedKV(t, 10)
	require.NoError(t, s.Put([]byte("ab"), []byte("123"))) // 5
	require.EqualValues(t, 5, s.StagedBytes())
	require.NoError(t, s.Put([]byte("ab"), []byte("12345678"))) // replaces: 10
	require.EqualValues(t, 10, s.StagedBytes())

	err := s.Put([]byte("c"), []byte("x"))
	require.ErrorIs(t, err, ErrStagingFull)
	var full *StagingFullError
	require.True(t, errors.As(err, &full))
	require.Equal(t, StagingFullError{Store: "kv", Limit: 10, Staged: 10, Write: 2}, *full)
	require.EqualError(t, err, `statestore: staged writes exceed 10 bytes: store "kv" has 10 bytes staged, a write needs 2 more`)
	_, ok := getKV(t, s, "c")
	require.False(t, ok, "a write that does not fit is not staged")

	// Shrinking writes always fit; a delete counts its key.
	require.NoError(t, s.Delete([]byte("ab")))
	require.EqualValues(t, 2, s.StagedBytes())
	require.NoError(t, s.Put([]byte("c"), []byte("x")))
	require.EqualValues(t, 4, s.StagedBytes())
	require.NoError(t, s.Commit())
	require.Zero(t, s.StagedBytes())
	require.NoError(t, s.Put([]byte("0123456789"), []byte{}))
}

func TestStagedKeyValueSnapshots(t *testing.T) {
	s := newStagedKV(t, 1<<20, "a", "c")
	require.NoError(t, s.Put([]byte("b"), []byte("vb")))
	it, err := s.Range(nil, nil)
	require.NoError(t, err)
	require.True(t, it.Next())
	require.Equal(t, "a", string(it.Key()))

	// Writes, a commit and a reset while the iterator is open are not seen.
	require.NoError(t, s.Delete([]byte("b")))
	require.NoError(t, s.Put([]byte("d"), []byte("vd")))
	require.NoError(t, s.Commit())
	require.NoError(t, s.Put([]byte("bb"), []byte("vbb")))
	s.Reset()

	var rest []kv
	for it.Next() {
		rest = append(rest, kv{string(it.Key()), string(it.Value())})
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	require.Equal(t, pairs("b", "c"), rest)
	require.Equal(t, pairs("a", "c", "d"), rangeKV(t, s, nil, nil))
}

func TestStagedKeyValueCopies(t *testing.T) {
	s := newStagedKV(t, 1<<20)
	k, v := []byte("k"), []byte("v")
	require.NoError(t, s.Put(k, v))
	k[0], v[0] = 'X', 'X'
	got, ok := getKV(t, s, "k")
	require.True(t, ok)
	require.Equal(t, "v", got)

	raw, _, err := s.Get([]byte("k"))
	require.NoError(t, err)
	raw[0] = 'Y'
	it, err := s.Range(nil, nil)
	require.NoError(t, err)
	require.True(t, it.Next())
	it.Key()[0], it.Value()[0] = 'Z', 'Z'
	require.Equal(t, "k", string(it.Key()))
	require.Equal(t, "v", string(it.Value()))
	require.NoError(t, it.Close())
}

func TestStagedIteratorLifecycle(t *testing.T) {
	s := newStagedKV(t, 1<<20, "a")
	require.NoError(t, s.Put([]byte("b"), []byte("vb")))
	it, err := s.Range(nil, nil)
	require.NoError(t, err)
	require.Nil(t, it.Key(), "before Next")
	require.Nil(t, it.Value())
	require.True(t, it.Next())
	require.True(t, it.Next())
	require.False(t, it.Next())
	require.Nil(t, it.Key(), "after the end")
	require.False(t, it.Next())
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	require.NoError(t, it.Close())
	require.NoError(t, it.Err())

	it, err = s.Range(nil, nil)
	require.NoError(t, err)
	require.True(t, it.Next())
	require.NoError(t, it.Close())
	require.Nil(t, it.Key())
	require.False(t, it.Next())
	require.ErrorIs(t, it.Err(), ErrClosed)
}

func TestStagedKeyValueClose(t *testing.T) {
	s := newStagedKV(t, 1<<20, "a")
	require.NoError(t, s.Put([]byte("b"), []byte("vb")))
	open, err := s.Range(nil, nil)
	require.NoError(t, err)
	require.True(t, open.Next())

	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	require.False(t, open.Next())
	require.ErrorIs(t, open.Err(), ErrClosed)
	require.NoError(t, open.Close())

	_, _, err = s.Get([]byte("a"))
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, s.Put([]byte("a"), []byte("1")), ErrClosed)
	require.ErrorIs(t, s.Delete([]byte("a")), ErrClosed)
	_, err = s.Range(nil, nil)
	require.ErrorIs(t, err, ErrClosed)
	_, err = s.PrefixScan(nil)
	require.ErrorIs(t, err, ErrClosed)
	_, err = s.ApproximateNumEntries()
	require.ErrorIs(t, err, ErrClosed)
	_, err = s.Changes()
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, s.Commit(), ErrClosed)
	_, _, err = s.Base().Get([]byte("a"))
	require.ErrorIs(t, err, ErrClosed, "the overlay closes its base")
}

// failingKV is a base whose iterators fail after yielding one pair.
type failingKV struct{ KeyValueStore }

type failingIter struct {
	Iterator
	n int
}

var errBase = errors.New("base failed")

func (f failingKV) Range(from, to []byte) (Iterator, error) {
	it, err := f.KeyValueStore.Range(from, to)
	return &failingIter{Iterator: it}, err
}

func (f *failingIter) Next() bool { f.n++; return f.n == 1 && f.Iterator.Next() }
func (f *failingIter) Err() error {
	if f.n > 1 {
		return errBase
	}
	return nil
}

func TestStagedIteratorBaseError(t *testing.T) {
	s, err := NewStagedKeyValue(failingKV{newFilledKV(t, "a", "b")}, 1<<10)
	require.NoError(t, err)
	require.NoError(t, s.Put([]byte("0"), []byte("x")))
	it, err := s.Range(nil, nil)
	require.NoError(t, err)
	require.True(t, it.Next()) // staged "0"
	require.True(t, it.Next()) // base "a"
	require.False(t, it.Next())
	require.ErrorIs(t, it.Err(), errBase)
	require.NoError(t, it.Close())
}

func TestMinTimeRoundTrips(t *testing.T) {
	// Changes lists a window base's expired entries with FetchAll from the
	// earliest time: it must survive the time.Time round trip.
	require.Equal(t, int64(math.MinInt64), time.UnixMilli(math.MinInt64).UnixMilli())
	require.Equal(t, time.UnixMilli(5), maxMilli(time.UnixMilli(5), noCutoff))
	require.Equal(t, time.UnixMilli(7), maxMilli(time.UnixMilli(5), 7))
}

// TestStagedConcurrentUse writes an overlay, commits and resets it while
// readers use the overlay and its base; run it with -race.
func TestStagedConcurrentUse(t *testing.T) {
	s := newStagedKV(t, 1<<20)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				for _, st := range []KeyValueStore{s, s.Base()} {
					it, err := st.Range(nil, nil)
					if !assert.NoError(t, err) {
						return
					}
					for it.Next() {
						assert.Equal(t, it.Key(), it.Value())
					}
					assert.NoError(t, it.Err())
					assert.NoError(t, it.Close())
				}
				_, _, err := s.Get([]byte("k1"))
				assert.NoError(t, err)
				_, err = s.Changes()
				assert.NoError(t, err)
			}
		}()
	}
	for i := range 2000 {
		k := []byte(fmt.Sprintf("k%d", i%50))
		require.NoError(t, s.Put(k, k))
		switch i % 100 {
		case 49:
			require.NoError(t, s.Commit())
		case 99:
			s.Reset()
		}
	}
	close(done)
	wg.Wait()
}
