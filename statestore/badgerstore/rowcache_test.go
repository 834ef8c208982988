package badgerstore_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/statestore"
	"github.com/weirstream/weir/statestore/badgerstore"
)

// The read cache never answers a Get with a value a write replaced: Put,
// Delete, Apply (one transaction and split over several) and DropPartition
// each show through at once, to every handle, also for rows read (and so
// cached) before, present or absent; and with the cache on or off.
func TestReadCacheFollowsWrites(t *testing.T) {
	for _, size := range []int64{0, -1, 200} { // default, off, tiny (evicts)
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			db, err := badgerstore.Open(t.TempDir(), badgerstore.Options{ReadCacheBytes: size})
			require.NoError(t, err)
			defer db.Close()
			a, b := openKV(t, db, "counts", 0), openKV(t, db, "counts", 0)
			get := func(s statestore.KeyValueStore, k string) (string, bool) {
				t.Helper()
				v, ok, err := s.Get([]byte(k))
				require.NoError(t, err)
				if ok {
					require.NotNil(t, v)
				}
				return string(v), ok
			}
			apply := func(k string, v []byte) {
				t.Helper()
				require.NoError(t, db.Apply([]badgerstore.Change{{Store: "counts", Partition: 0, Kind: statestore.KindKeyValue, Key: []byte(k), Value: v}}, nil))
			}
			for i := range 3 { // read twice: the second read is the cached one
				_, ok := get(a, "k")
				require.False(t, ok, i)
				require.NoError(t, b.Put([]byte("k"), []byte(fmt.Sprint(i))))
				v, ok := get(a, "k")
				require.True(t, ok)
				require.Equal(t, fmt.Sprint(i), v)
				v, _ = get(a, "k")
				require.Equal(t, fmt.Sprint(i), v)
				apply("k", []byte("applied"))
				v, _ = get(b, "k")
				require.Equal(t, "applied", v)
				apply("k", []byte{})
				v, ok = get(a, "k")
				require.True(t, ok, "an empty value is a value")
				require.Empty(t, v)
				apply("k", nil)
				_, ok = get(a, "k")
				require.False(t, ok)
			}
			// A returned value is the caller's: changing it changes no
			// later read.
			require.NoError(t, a.Put([]byte("m"), []byte("mine")))
			v, _, err := a.Get([]byte("m"))
			require.NoError(t, err)
			v[0] = 'X'
			got, _ := get(a, "m")
			require.Equal(t, "mine", got)
			// An Apply too big for one transaction (split in a WriteBatch).
			var big []badgerstore.Change
			for i := range 40_000 {
				big = append(big, badgerstore.Change{Store: "counts", Partition: 0, Kind: statestore.KindKeyValue,
					Key: fmt.Appendf(nil, "big%05d", i), Value: []byte("v1")})
			}
			_, _ = get(a, "big00007")
			require.NoError(t, db.Apply(big, nil))
			got, _ = get(a, "big00007")
			require.Equal(t, "v1", got)
			require.NoError(t, db.DropPartition("counts", 0))
			_, ok := get(a, "big00007")
			require.False(t, ok, "dropped")
			_, ok = get(a, "m")
			require.False(t, ok, "dropped")
		})
	}
}

// Reads racing with writes of the same keys never see a value older than
// the last write that committed before the read began (run with -race).
func TestReadCacheConcurrentWrites(t *testing.T) {
	db, err := badgerstore.Open(t.TempDir(), badgerstore.Options{})
	require.NoError(t, err)
	defer db.Close()
	w, r := openKV(t, db, "counts", 0), openKV(t, db, "counts", 0)
	const keys, rounds = 8, 300
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		last [keys]int // the last value whose write returned
	)
	wg.Go(func() {
		for i := 1; i <= rounds; i++ {
			k := i % keys
			require.NoError(t, w.Put(fmt.Appendf(nil, "k%d", k), fmt.Appendf(nil, "%06d", i)))
			mu.Lock()
			last[k] = i
			mu.Unlock()
		}
	})
	for range 2 {
		wg.Go(func() {
			for i := range rounds * 2 {
				k := i % keys
				mu.Lock()
				floor := last[k]
				mu.Unlock()
				v, ok, err := r.Get(fmt.Appendf(nil, "k%d", k))
				require.NoError(t, err)
				if floor > 0 {
					require.True(t, ok)
					var n int
					_, err := fmt.Sscanf(string(v), "%d", &n)
					require.NoError(t, err)
					require.GreaterOrEqual(t, n, floor, "key %d: a read returned a value older than a committed write", k)
				}
			}
		})
	}
	wg.Wait()
}
