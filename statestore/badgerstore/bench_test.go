package badgerstore_test

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/weirstream/weir/statestore"
	"github.com/weirstream/weir/statestore/badgerstore"
)

// Benchmarks of the Badger stores on disk (t.TempDir), with the default
// options (no fsync). Run with
// go test -run '^$' -bench . ./statestore/badgerstore/

const benchKeys = 100_000

func benchKey(buf []byte, i uint64) []byte {
	// Scatter the keys so writes land all over the key space.
	return binary.BigEndian.AppendUint64(buf[:0], i*0x9e3779b97f4a7c15)
}

func benchKV(b *testing.B) (*badgerstore.DB, statestore.KeyValueStore) {
	b.Helper()
	db := openTestDB(b, badgerstore.Options{})
	s, err := db.Factory().Open(statestore.Spec{Name: "bench", Kind: statestore.KindKeyValue}, 0)
	if err != nil {
		b.Fatal(err)
	}
	return db, s.(statestore.KeyValueStore)
}

// BenchmarkPut is one Put, hence one Badger transaction, per op.
func BenchmarkPut(b *testing.B) {
	_, s := benchKV(b)
	value := make([]byte, 64)
	var buf []byte
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		buf = benchKey(buf, i%benchKeys)
		if err := s.Put(buf, value); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkGet reads random keys of a store of benchKeys keys.
func BenchmarkGet(b *testing.B) {
	db, s := benchKV(b)
	value := make([]byte, 64)
	changes := make([]badgerstore.Change, 0, benchKeys)
	for i := range uint64(benchKeys) {
		changes = append(changes, badgerstore.Change{Store: "bench", Kind: statestore.KindKeyValue, Key: benchKey(nil, i), Value: value})
	}
	if err := db.Apply(changes, nil); err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = benchKey(buf, r.Uint64N(benchKeys))
		if _, ok, err := s.Get(buf); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}

// BenchmarkApply1000 applies an epoch of 1000 changes — 800 key-value puts
// and 200 window puts — with two checkpoints, in one transaction.
func BenchmarkApply1000(b *testing.B) {
	db, _ := benchKV(b)
	value := make([]byte, 64)
	changes := make([]badgerstore.Change, 1000)
	checkpoints := map[badgerstore.StorePartition]badgerstore.Position{{Store: "bench"}: {Offset: 0}, {Store: "wins"}: {Offset: 0}}
	b.ReportAllocs()
	epoch := uint64(0)
	for b.Loop() {
		for i := range changes {
			n := (epoch*1000 + uint64(i)) % benchKeys
			if i < 800 {
				changes[i] = badgerstore.Change{Store: "bench", Kind: statestore.KindKeyValue, Key: benchKey(nil, n), Value: value}
			} else {
				changes[i] = badgerstore.Change{Store: "wins", Kind: statestore.KindWindow,
					Key: statestore.EncodeWindowKey(benchKey(nil, n), ms(int64(epoch))), Value: value}
			}
		}
		checkpoints[badgerstore.StorePartition{Store: "bench"}] = badgerstore.Position{Offset: int64(epoch)}
		checkpoints[badgerstore.StorePartition{Store: "wins"}] = badgerstore.Position{Offset: int64(epoch)}
		if err := db.Apply(changes, checkpoints); err != nil {
			b.Fatal(err)
		}
		epoch++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/change")
}

// BenchmarkFetch fetches the ten windows of one key among 10,000 keys.
func BenchmarkFetch(b *testing.B) {
	db := openTestDB(b, badgerstore.Options{})
	s, err := db.Factory().Open(statestore.Spec{Name: "wins", Kind: statestore.KindWindow}, 0)
	if err != nil {
		b.Fatal(err)
	}
	w := s.(statestore.WindowStore)
	const keys = 10_000
	value := make([]byte, 64)
	changes := make([]badgerstore.Change, 0, 10*keys)
	for i := range uint64(keys) {
		for start := range int64(10) {
			changes = append(changes, badgerstore.Change{Store: "wins", Kind: statestore.KindWindow,
				Key: statestore.EncodeWindowKey(benchKey(nil, i), ms(start*1000)), Value: value})
		}
	}
	if err := db.Apply(changes, nil); err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = benchKey(buf, r.Uint64N(keys))
		it, err := w.Fetch(buf, ms(0), ms(10_000))
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for it.Next() {
			n++
		}
		if err := it.Close(); err != nil || n != 10 {
			b.Fatal(n, err)
		}
	}
}

// BenchmarkGetHotKeys reads the keys of a word count's store: 1,000 keys,
// each rewritten by 100 applies (epochs), so the memtables hold 100
// versions of each — with the read cache off and on.
func BenchmarkGetHotKeys(b *testing.B) {
	for _, c := range []struct {
		name  string
		bytes int64
	}{{"cache=off", -1}, {"cache=on", 0}} {
		b.Run(c.name, func(b *testing.B) {
			db, err := badgerstore.Open(b.TempDir(), badgerstore.Options{ReadCacheBytes: c.bytes})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = db.Close() })
			s, err := db.Factory().Open(statestore.Spec{Name: "bench", Kind: statestore.KindKeyValue}, 0)
			if err != nil {
				b.Fatal(err)
			}
			kv := s.(statestore.KeyValueStore)
			const keys = 1000
			changes := make([]badgerstore.Change, keys)
			for epoch := range uint64(100) {
				for i := range uint64(keys) {
					changes[i] = badgerstore.Change{Store: "bench", Kind: statestore.KindKeyValue, Key: benchKey(nil, i), Value: benchKey(nil, epoch)}
				}
				if err := db.Apply(changes, nil); err != nil {
					b.Fatal(err)
				}
			}
			r := rand.New(rand.NewPCG(1, 2))
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				buf = benchKey(buf, r.Uint64N(keys))
				if _, ok, err := kv.Get(buf); err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
		})
	}
}
