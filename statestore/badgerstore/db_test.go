package badgerstore_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/statestore"
	"github.com/weirstream/weir/statestore/badgerstore"
)

func openKV(t *testing.T, db *badgerstore.DB, name string, partition int32) statestore.KeyValueStore {
	t.Helper()
	s, err := db.Factory().Open(statestore.Spec{Name: name, Kind: statestore.KindKeyValue}, partition)
	require.NoError(t, err)
	return s.(statestore.KeyValueStore)
}

func openWindow(t *testing.T, db *badgerstore.DB, name string, partition int32) statestore.WindowStore {
	t.Helper()
	s, err := db.Factory().Open(statestore.Spec{Name: name, Kind: statestore.KindWindow}, partition)
	require.NoError(t, err)
	return s.(statestore.WindowStore)
}

func openSession(t *testing.T, db *badgerstore.DB, name string, partition int32) statestore.SessionStore {
	t.Helper()
	s, err := db.Factory().Open(statestore.Spec{Name: name, Kind: statestore.KindSession}, partition)
	require.NoError(t, err)
	return s.(statestore.SessionStore)
}

func TestOpenInvalid(t *testing.T) {
	_, err := badgerstore.Open("", badgerstore.Options{})
	require.ErrorIs(t, err, badgerstore.ErrInvalid)
	_, err = badgerstore.Open(t.TempDir(), badgerstore.Options{MemTableSize: -1})
	require.ErrorIs(t, err, badgerstore.ErrInvalid)

	// A Badger database of another kind is refused.
	dir := t.TempDir()
	other, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	require.NoError(t, err)
	require.NoError(t, other.Update(func(txn *badger.Txn) error { return txn.Set([]byte("foreign"), []byte("x")) }))
	require.NoError(t, other.Close())
	_, err = badgerstore.Open(dir, badgerstore.Options{Logger: slog.New(slog.DiscardHandler)})
	require.ErrorIs(t, err, badgerstore.ErrCorrupt)

	// Badger locks the directory.
	dir = t.TempDir()
	db, err := badgerstore.Open(dir, badgerstore.Options{})
	require.NoError(t, err)
	_, err = badgerstore.Open(dir, badgerstore.Options{})
	require.Error(t, err)
	require.NoError(t, db.Close())
	require.NoError(t, db.Close(), "closing twice is not an error")
	require.Equal(t, dir, db.Dir())
}

func TestReopenPersists(t *testing.T) {
	dir := t.TempDir()
	db, err := badgerstore.Open(dir, badgerstore.Options{SyncWrites: true})
	require.NoError(t, err)
	counts := openKV(t, db, "counts", 3)
	require.NoError(t, counts.Put([]byte("a"), []byte("1")))
	require.NoError(t, counts.Put([]byte("b"), []byte{}))
	w := openWindow(t, db, "windows", 3)
	require.NoError(t, w.Put([]byte("a"), ms(10), []byte("w")))
	s := openSession(t, db, "sessions", 3)
	require.NoError(t, s.Put([]byte("a"), ms(1), ms(5), []byte("s")))
	// Closing a handle keeps the rows.
	require.NoError(t, counts.Close())
	require.NoError(t, db.Close())

	db, err = badgerstore.Open(dir, badgerstore.Options{})
	require.NoError(t, err)
	defer db.Close()
	require.Equal(t, []kv{{"a", "1"}, {"b", ""}}, rangeKV(t, openKV(t, db, "counts", 3), nil, nil))
	require.Equal(t, []win{{"a", 10, "w"}}, fetchAll(t, openWindow(t, db, "windows", 3), 0, 100))
	require.Equal(t, []sess{{"a", 1, 5, "s"}}, find(t, openSession(t, db, "sessions", 3), "a", 0, 100))
	require.Empty(t, rangeKV(t, openKV(t, db, "counts", 4), nil, nil), "another partition")

	// The kind of a store partition is recorded.
	_, err = db.Factory().Open(statestore.Spec{Name: "counts", Kind: statestore.KindWindow}, 3)
	require.ErrorIs(t, err, badgerstore.ErrInvalid)
	_, err = db.Factory().Open(statestore.Spec{Name: "bad\x00name", Kind: statestore.KindKeyValue}, 3)
	require.ErrorIs(t, err, badgerstore.ErrInvalid)
}

func TestStoreNamesArePrefixFree(t *testing.T) {
	db := openTestDB(t, badgerstore.Options{})
	a, ab := openKV(t, db, "a", 1), openKV(t, db, "ab", 1)
	a1 := openKV(t, db, "a", 256) // partition bytes 00 00 01 00
	require.NoError(t, a.Put([]byte("k"), []byte("a")))
	require.NoError(t, ab.Put([]byte("k"), []byte("ab")))
	require.NoError(t, a1.Put([]byte("k"), []byte("a256")))
	require.Equal(t, []kv{{"k", "a"}}, rangeKV(t, a, nil, nil))
	require.Equal(t, []kv{{"k", "ab"}}, rangeKV(t, ab, nil, nil))
	require.Equal(t, []kv{{"k", "a256"}}, prefixKV(t, a1, nil))
	n, err := a.ApproximateNumEntries()
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
}

func TestCloseDB(t *testing.T) {
	db, err := badgerstore.Open(t.TempDir(), badgerstore.Options{})
	require.NoError(t, err)
	store := openKV(t, db, "kv", 0)
	fillKV(t, store, "a", "b", "c")
	w := openWindow(t, db, "w", 0)
	fillWindows(t, w, win{"a", 1, "x"})
	open, err := store.Range(nil, nil)
	require.NoError(t, err)
	require.True(t, open.Next())
	never, err := w.FetchAll(ms(0), ms(10))
	require.NoError(t, err)

	require.NoError(t, db.Close())
	require.False(t, open.Next(), "open iterators stop")
	require.ErrorIs(t, open.Err(), statestore.ErrClosed)
	require.NoError(t, open.Close())
	require.NoError(t, never.Close(), "an iterator never advanced closes cleanly")

	_, _, err = store.Get([]byte("a"))
	require.ErrorIs(t, err, statestore.ErrClosed)
	require.ErrorIs(t, store.Put([]byte("a"), []byte("x")), statestore.ErrClosed)
	_, err = store.Range(nil, nil)
	require.ErrorIs(t, err, statestore.ErrClosed)
	require.ErrorIs(t, w.ExpireBefore(ms(5)), statestore.ErrClosed)
	_, err = db.Factory().Open(statestore.Spec{Name: "kv", Kind: statestore.KindKeyValue}, 0)
	require.ErrorIs(t, err, statestore.ErrClosed)
	require.ErrorIs(t, db.Apply(nil, nil), badgerstore.ErrClosed)
	_, _, err = db.Checkpoint("kv", 0)
	require.ErrorIs(t, err, statestore.ErrClosed)
	_, err = db.Stats()
	require.ErrorIs(t, err, badgerstore.ErrClosed)
	require.ErrorIs(t, db.DropPartition("kv", 0), badgerstore.ErrClosed)
	_, _, err = db.Get("kv", 0, []byte("a"))
	require.ErrorIs(t, err, badgerstore.ErrClosed)
}

func TestReadOnly(t *testing.T) {
	dir := t.TempDir()
	db, err := badgerstore.Open(dir, badgerstore.Options{})
	require.NoError(t, err)
	fillKV(t, openKV(t, db, "kv", 0), "a", "b")
	require.NoError(t, db.Apply(nil, map[badgerstore.StorePartition]badgerstore.Position{{Store: "kv", Partition: 0}: {Offset: 7}}))
	require.NoError(t, db.Close())

	ro, err := badgerstore.Open(dir, badgerstore.Options{ReadOnly: true})
	require.NoError(t, err)
	defer ro.Close()
	store := openKV(t, ro, "kv", 0)
	require.Equal(t, pairs("a", "b"), rangeKV(t, store, nil, nil))
	require.ErrorIs(t, store.Put([]byte("c"), []byte("x")), badgerstore.ErrReadOnly)
	require.ErrorIs(t, ro.Apply(nil, nil), badgerstore.ErrReadOnly)
	require.ErrorIs(t, ro.DropPartition("kv", 0), badgerstore.ErrReadOnly)
	offset, ok, err := ro.Checkpoint("kv", 0)
	require.NoError(t, err)
	require.True(t, ok)
	require.EqualValues(t, 7, offset.Offset)
	v, ok, err := ro.Get("kv", 0, []byte("a"))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "va", string(v))
}

func TestReaderIsReadOnlyAndNotShared(t *testing.T) {
	db, err := badgerstore.Open(t.TempDir(), badgerstore.Options{})
	require.NoError(t, err)
	defer db.Close()
	spec := statestore.Spec{Name: "counts", Kind: statestore.KindKeyValue}
	s, err := db.Factory().Open(spec, 3)
	require.NoError(t, err)
	kv := s.(statestore.KeyValueStore)
	require.NoError(t, kv.Put([]byte("a"), []byte("1")))

	r, err := db.Reader(spec, 3)
	require.NoError(t, err)
	rkv := r.(statestore.KeyValueStore)
	v, ok, err := rkv.Get([]byte("a"))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []byte("1"), v)
	require.ErrorIs(t, rkv.Put([]byte("b"), []byte("2")), badgerstore.ErrReadOnly)
	require.NoError(t, r.Close())
	// Closing the reader leaves the task's handle open.
	require.NoError(t, kv.Put([]byte("b"), []byte("2")))

	_, err = db.Reader(statestore.Spec{Name: "counts", Kind: statestore.KindWindow}, 3)
	require.ErrorIs(t, err, badgerstore.ErrInvalid)
	empty, err := db.Reader(spec, 9)
	require.NoError(t, err)
	_, ok, err = empty.(statestore.KeyValueStore).Get([]byte("a"))
	require.NoError(t, err)
	require.False(t, ok)

	w, err := db.Reader(statestore.Spec{Name: "windows", Kind: statestore.KindWindow}, 0)
	require.NoError(t, err)
	require.ErrorIs(t, w.(statestore.WindowStore).ExpireBefore(time.UnixMilli(5)), badgerstore.ErrReadOnly)
}
