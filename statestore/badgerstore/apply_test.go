package badgerstore_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/statestore"
	"github.com/weirstream/weir/statestore/badgerstore"
)

type sp = badgerstore.StorePartition

func TestApplyAtomicAndPersistent(t *testing.T) {
	dir := t.TempDir()
	db, err := badgerstore.Open(dir, badgerstore.Options{})
	require.NoError(t, err)
	counts := openKV(t, db, "counts", 0)
	require.NoError(t, counts.Put([]byte("gone"), []byte("x")))

	changes := []badgerstore.Change{
		{Store: "counts", Partition: 0, Kind: statestore.KindKeyValue, Key: []byte("a"), Value: []byte("1")},
		{Store: "counts", Partition: 0, Kind: statestore.KindKeyValue, Key: []byte("gone")}, // delete
		{Store: "counts", Partition: 0, Kind: statestore.KindKeyValue, Key: []byte("a"), Value: []byte("2")},
		{Store: "wins", Partition: 1, Kind: statestore.KindWindow, Key: statestore.EncodeWindowKey([]byte("k"), ms(10)), Value: []byte("w")},
		{Store: "sess", Partition: 1, Kind: statestore.KindSession, Key: statestore.EncodeSessionKey([]byte("k"), ms(1), ms(5)), Value: []byte("s")},
	}
	checkpoints := map[sp]badgerstore.Position{{Store: "counts", Partition: 0}: {Offset: 42}, {Store: "wins", Partition: 1}: {Offset: 7}, {Store: "sess", Partition: 1}: {Offset: 0}}
	require.NoError(t, db.Apply(changes, checkpoints))

	// Visible at once to open handles.
	require.Equal(t, []kv{{"a", "2"}}, rangeKV(t, counts, nil, nil), "a later change wins")
	require.NoError(t, db.Close())

	db, err = badgerstore.Open(dir, badgerstore.Options{})
	require.NoError(t, err)
	defer db.Close()
	for store, want := range map[sp]badgerstore.Position{{Store: "counts", Partition: 0}: {Offset: 42}, {Store: "wins", Partition: 1}: {Offset: 7}, {Store: "sess", Partition: 1}: {Offset: 0}} {
		offset, ok, err := db.Checkpoint(store.Store, store.Partition)
		require.NoError(t, err)
		require.True(t, ok, store)
		require.Equal(t, want, offset, store)
	}
	_, ok, err := db.Checkpoint("counts", 1)
	require.NoError(t, err)
	require.False(t, ok)
	require.Equal(t, []kv{{"a", "2"}}, rangeKV(t, openKV(t, db, "counts", 0), nil, nil))
	w := openWindow(t, db, "wins", 1)
	require.Equal(t, []win{{"k", 10, "w"}}, fetchAll(t, w, 0, 100))
	require.Equal(t, []sess{{"k", 1, 5, "s"}}, find(t, openSession(t, db, "sess", 1), "k", 0, 100))

	// Apply keeps the expiry index: the window expires.
	require.NoError(t, w.ExpireBefore(ms(11)))
	require.Empty(t, fetchAll(t, w, 0, 100))
}

func TestApplyValidatesFirst(t *testing.T) {
	db := openTestDB(t, badgerstore.Options{})
	openWindow(t, db, "wins", 0)
	good := badgerstore.Change{Store: "kv", Partition: 0, Kind: statestore.KindKeyValue, Key: []byte("a"), Value: []byte("1")}
	ckpt := map[sp]badgerstore.Position{{Store: "kv", Partition: 0}: {Offset: 5}}
	for name, bad := range map[string]badgerstore.Change{
		"empty name":    {Store: "", Kind: statestore.KindKeyValue, Key: []byte("a")},
		"unknown kind":  {Store: "x", Kind: statestore.Kind(9), Key: []byte("a")},
		"short window":  {Store: "w2", Kind: statestore.KindWindow, Key: []byte("short")},
		"short session": {Store: "s2", Kind: statestore.KindSession, Key: []byte("0123456789")},
		"mixed kinds":   {Store: "kv", Partition: 0, Kind: statestore.KindWindow, Key: statestore.EncodeWindowKey(nil, ms(1))},
		"recorded kind": {Store: "wins", Partition: 0, Kind: statestore.KindKeyValue, Key: []byte("a"), Value: []byte("x")},
	} {
		err := db.Apply([]badgerstore.Change{good, bad}, ckpt)
		require.ErrorIs(t, err, badgerstore.ErrInvalid, name)
	}
	err := db.Apply([]badgerstore.Change{good, {
		Store: "s", Kind: statestore.KindSession, Key: statestore.EncodeSessionKey([]byte("k"), ms(5), ms(1)), Value: []byte("x"),
	}}, ckpt)
	require.ErrorIs(t, err, statestore.ErrInvalidSession)
	require.ErrorIs(t, db.Apply(nil, map[sp]badgerstore.Position{{Store: "kv"}: {Offset: -1}}), badgerstore.ErrInvalid)
	require.ErrorIs(t, db.Apply(nil, map[sp]badgerstore.Position{{Store: "a\x00b"}: {Offset: 1}}), badgerstore.ErrInvalid)

	// Nothing was written.
	_, ok, err := db.Checkpoint("kv", 0)
	require.NoError(t, err)
	require.False(t, ok)
	_, ok, err = db.Get("kv", 0, []byte("a"))
	require.NoError(t, err)
	require.False(t, ok)
}

// TestApplyLarge applies more than one Badger transaction holds, which
// Apply splits with the checkpoints last.
func TestApplyLarge(t *testing.T) {
	dir := t.TempDir()
	var logged syncBuffer
	logger := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	db, err := badgerstore.Open(dir, badgerstore.Options{MemTableSize: 1 << 20, Logger: logger}) // ~150 KB per transaction
	require.NoError(t, err)
	const n = 20000
	value := make([]byte, 100)
	changes := make([]badgerstore.Change, 0, n)
	for i := range n {
		changes = append(changes, badgerstore.Change{
			Store: "big", Partition: 2, Kind: statestore.KindWindow,
			Key: statestore.EncodeWindowKey(fmt.Appendf(nil, "key-%06d", i), ms(int64(i%10))), Value: value,
		})
	}
	require.NoError(t, db.Apply(changes, map[sp]badgerstore.Position{{Store: "big", Partition: 2}: {Offset: n}}))
	require.Contains(t, logged.String(), "apply split over several transactions")
	require.NoError(t, db.Close())

	db, err = badgerstore.Open(dir, badgerstore.Options{MemTableSize: 1 << 20})
	require.NoError(t, err)
	defer db.Close()
	offset, ok, err := db.Checkpoint("big", 2)
	require.NoError(t, err)
	require.True(t, ok)
	require.EqualValues(t, n, offset.Offset)
	stats, err := db.Stats()
	require.NoError(t, err)
	require.Equal(t, []badgerstore.StoreStats{{Store: "big", Partition: 2, Kind: statestore.KindWindow, Rows: n, Checkpoint: n, HasCheckpoint: true}}, stats)
	w := openWindow(t, db, "big", 2)
	require.NoError(t, w.ExpireBefore(ms(5)))
	stats, err = db.Stats()
	require.NoError(t, err)
	require.EqualValues(t, n/2, stats[0].Rows)
}

func TestDropPartition(t *testing.T) {
	db := openTestDB(t, badgerstore.Options{})
	kv0, kv1 := openKV(t, db, "kv", 0), openKV(t, db, "kv", 1)
	fillKV(t, kv0, "a", "b")
	fillKV(t, kv1, "c")
	w0 := openWindow(t, db, "kv-w", 0)
	fillWindows(t, w0, win{"a", 1, "x"})
	require.NoError(t, db.Apply(nil, map[sp]badgerstore.Position{{Store: "kv", Partition: 0}: {Offset: 3}, {Store: "kv", Partition: 1}: {Offset: 4}}))
	open, err := kv0.Range(nil, nil)
	require.NoError(t, err)
	require.True(t, open.Next())

	require.NoError(t, db.DropPartition("kv", 0))
	for open.Next() { // an open iterator survives the drop
	}
	require.NoError(t, open.Err())
	require.NoError(t, open.Close())
	require.Empty(t, rangeKV(t, kv0, nil, nil), "an open handle sees it empty")
	_, ok, err := db.Checkpoint("kv", 0)
	require.NoError(t, err)
	require.False(t, ok, "the checkpoint is gone")
	require.Equal(t, pairs("c"), rangeKV(t, kv1, nil, nil), "other partitions stay")
	require.Equal(t, []win{{"a", 1, "x"}}, fetchAll(t, w0, 0, 10), "other stores stay")
	offset, ok, err := db.Checkpoint("kv", 1)
	require.NoError(t, err)
	require.True(t, ok)
	require.EqualValues(t, 4, offset.Offset)

	// The handle still works, and the partition may be reopened.
	require.NoError(t, kv0.Put([]byte("z"), []byte("1")))
	require.Equal(t, []kv{{"z", "1"}}, rangeKV(t, openKV(t, db, "kv", 0), nil, nil))
	require.NoError(t, db.DropPartition("missing", 9))
	require.ErrorIs(t, db.DropPartition("", 0), badgerstore.ErrInvalid)
}

func TestStatsAndGet(t *testing.T) {
	db := openTestDB(t, badgerstore.Options{})
	stats, err := db.Stats()
	require.NoError(t, err)
	require.Empty(t, stats)

	fillKV(t, openKV(t, db, "b-kv", 1), "a", "b", "c")
	fillKV(t, openKV(t, db, "b-kv", 0), "a")
	fillWindows(t, openWindow(t, db, "a-win", 0), win{"k", 1, "x"}, win{"k", 2, "y"})
	fillSessions(t, openSession(t, db, "c-sess", 0), sess{"k", 1, 2, "s"})
	openKV(t, db, "empty", 0)
	require.NoError(t, db.Apply(nil, map[sp]badgerstore.Position{{Store: "b-kv", Partition: 1}: {Offset: 9}, {Store: "orphan", Partition: 0}: {Offset: 1}}))

	stats, err = db.Stats()
	require.NoError(t, err)
	require.Equal(t, []badgerstore.StoreStats{
		{Store: "a-win", Partition: 0, Kind: statestore.KindWindow, Rows: 2},
		{Store: "b-kv", Partition: 0, Kind: statestore.KindKeyValue, Rows: 1},
		{Store: "b-kv", Partition: 1, Kind: statestore.KindKeyValue, Rows: 3, Checkpoint: 9, HasCheckpoint: true},
		{Store: "c-sess", Partition: 0, Kind: statestore.KindSession, Rows: 1},
		{Store: "empty", Partition: 0, Kind: statestore.KindKeyValue},
		{Store: "orphan", Partition: 0, Checkpoint: 1, HasCheckpoint: true},
	}, stats)

	for _, tt := range []struct {
		store string
		key   []byte
		want  string
		ok    bool
	}{
		{"b-kv", []byte("b"), "vb", true},
		{"b-kv", []byte("z"), "", false},
		{"a-win", statestore.EncodeWindowKey([]byte("k"), ms(2)), "y", true},
		{"c-sess", statestore.EncodeSessionKey([]byte("k"), ms(1), ms(2)), "s", true},
		{"nothing", []byte("a"), "", false},
	} {
		partition := int32(0)
		if tt.store == "b-kv" {
			partition = 1
		}
		v, ok, err := db.Get(tt.store, partition, tt.key)
		require.NoError(t, err)
		require.Equal(t, tt.ok, ok, tt.store)
		require.Equal(t, tt.want, string(v), tt.store)
	}
	_, _, err = db.Get("a-win", 0, []byte("short"))
	require.ErrorIs(t, err, badgerstore.ErrInvalid)
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of Badger's
// goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestCheckpointKeepsTheWriterGeneration(t *testing.T) {
	dir := t.TempDir()
	db, err := badgerstore.Open(dir, badgerstore.Options{})
	require.NoError(t, err)
	require.NoError(t, db.Apply(nil, map[sp]badgerstore.Position{{Store: "kv", Partition: 0}: {Offset: 9, Writer: 12}, {Store: "kv", Partition: 1}: {Offset: 3}}))
	require.ErrorIs(t, db.Apply(nil, map[sp]badgerstore.Position{{Store: "kv"}: {Offset: 1, Writer: -1}}), badgerstore.ErrInvalid)
	require.NoError(t, db.Close())

	db, err = badgerstore.Open(dir, badgerstore.Options{ReadOnly: true})
	require.NoError(t, err)
	defer db.Close()
	pos, ok, err := db.Checkpoint("kv", 0)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, badgerstore.Position{Offset: 9, Writer: 12}, pos)
	pos, ok, err = db.Checkpoint("kv", 1)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, badgerstore.Position{Offset: 3}, pos, "a checkpoint without a writer generation reads as before")
	stats, err := db.Stats()
	require.NoError(t, err)
	require.Len(t, stats, 2)
	require.Equal(t, int32(12), stats[0].Writer)
	require.Equal(t, int64(9), stats[0].Checkpoint)
}
