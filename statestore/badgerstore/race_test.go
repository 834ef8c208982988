package badgerstore_test

import (
	"bytes"
	"encoding/binary"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/statestore"
	"github.com/weirstream/weir/statestore/badgerstore"
)

// TestConcurrentReadersDuringWrites runs writers — store puts, Apply,
// ExpireBefore — against readers that Get, iterate, take Stats and read
// checkpoints, as interactive queries do while a task commits; run it with
// -race. Every value equals its key, so readers can check what they see.
// The goroutines use assert, not require: FailNow must be called from the
// test goroutine.
func TestConcurrentReadersDuringWrites(t *testing.T) {
	db := openTestDB(t, badgerstore.Options{})
	kv := openKV(t, db, "kv", 0)
	w := openWindow(t, db, "w", 0)
	const (
		writes  = 500
		keys    = 100
		readers = 4
	)
	key := func(i int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(i%keys)) }

	stop := make(chan struct{})
	var readersWG sync.WaitGroup
	for range readers {
		readersWG.Add(1)
		go func() {
			defer readersWG.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if v, ok, err := kv.Get(key(i)); assert.NoError(t, err) && ok {
					assert.Equal(t, key(i), v)
				}
				it, err := kv.Range(key(10), key(60))
				if assert.NoError(t, err) {
					var prev []byte
					for it.Next() {
						assert.Equal(t, it.Key(), it.Value())
						assert.Negative(t, bytes.Compare(prev, it.Key()))
						prev = it.Key()
					}
					assert.NoError(t, it.Err())
					assert.NoError(t, it.Close())
				}
				wit, err := w.FetchAll(ms(0), ms(1000))
				if assert.NoError(t, err) {
					for wit.Next() {
						assert.Equal(t, wit.Key(), wit.Value())
					}
					assert.NoError(t, wit.Err())
					assert.NoError(t, wit.Close())
				}
				if i%20 == 0 {
					_, err := db.Stats()
					assert.NoError(t, err)
					_, _, err = db.Checkpoint("kv", 0)
					assert.NoError(t, err)
				}
			}
		}()
	}

	var writersWG sync.WaitGroup
	writersWG.Add(2)
	go func() {
		defer writersWG.Done()
		for i := range writes {
			assert.NoError(t, kv.Put(key(i), key(i)))
			if i%7 == 0 {
				assert.NoError(t, kv.Delete(key(i+1)))
			}
			assert.NoError(t, w.Put(key(i), ms(int64(i)), key(i)))
			if i%50 == 0 {
				assert.NoError(t, w.ExpireBefore(ms(int64(i-100))))
			}
		}
	}()
	go func() {
		defer writersWG.Done()
		for i := range writes / 10 {
			changes := []badgerstore.Change{
				{Store: "kv", Kind: statestore.KindKeyValue, Key: key(i * 3), Value: key(i * 3)},
				{Store: "w", Kind: statestore.KindWindow, Key: statestore.EncodeWindowKey(key(i), ms(int64(i))), Value: key(i)},
			}
			assert.NoError(t, db.Apply(changes, map[sp]badgerstore.Position{{Store: "kv"}: {Offset: int64(i)}, {Store: "w"}: {Offset: int64(i)}}))
		}
	}()
	writersWG.Wait()
	close(stop)
	readersWG.Wait()

	offset, ok, err := db.Checkpoint("kv", 0)
	require.NoError(t, err)
	require.True(t, ok)
	require.EqualValues(t, writes/10-1, offset.Offset)
}

// TestCloseWhileIterating closes the database while goroutines iterate:
// their iterators end with statestore.ErrClosed, and nothing touches Badger
// after it is closed.
func TestCloseWhileIterating(t *testing.T) {
	db, err := badgerstore.Open(t.TempDir(), badgerstore.Options{})
	require.NoError(t, err)
	kv := openKV(t, db, "kv", 0)
	for i := range 2000 {
		k := binary.BigEndian.AppendUint32(nil, uint32(i))
		require.NoError(t, kv.Put(k, k))
	}
	var wg sync.WaitGroup
	started := make(chan struct{}, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				it, err := kv.Range(nil, nil)
				if err != nil {
					assert.ErrorIs(t, err, statestore.ErrClosed)
					return
				}
				if n == 0 {
					started <- struct{}{}
				}
				for it.Next() {
				}
				if it.Err() != nil {
					assert.ErrorIs(t, it.Err(), statestore.ErrClosed)
				}
				assert.NoError(t, it.Close())
			}
		}()
	}
	for range 4 {
		<-started
	}
	require.NoError(t, db.Close())
	wg.Wait()
}
