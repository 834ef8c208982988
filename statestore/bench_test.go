package statestore

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// Benchmarks of the in-memory key-value store at a million keys. Run with
// go test -run '^$' -bench . ./statestore/

const benchKeys = 1 << 20

func benchKey(buf []byte, i uint64) []byte {
	// Scatter the keys so inserts land all over the tree.
	return binary.BigEndian.AppendUint64(buf[:0], i*0x9e3779b97f4a7c15)
}

func filledBenchStore(b *testing.B) KeyValueStore {
	b.Helper()
	s := NewInMemoryKeyValue("bench")
	var buf []byte
	for i := range uint64(benchKeys) {
		buf = benchKey(buf, i)
		if err := s.Put(buf, buf); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

func BenchmarkKeyValuePutRandom(b *testing.B) {
	s := NewInMemoryKeyValue("bench")
	var buf []byte
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		buf = benchKey(buf, i%benchKeys)
		if err := s.Put(buf, buf); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkKeyValueGet(b *testing.B) {
	s := filledBenchStore(b)
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

// BenchmarkKeyValuePutWhileIterating measures a write that follows a
// snapshot (an open iterator): it copies the path to the key once.
func BenchmarkKeyValuePutWhileIterating(b *testing.B) {
	s := filledBenchStore(b)
	r := rand.New(rand.NewPCG(1, 2))
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		it, err := s.Range(nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		buf = benchKey(buf, r.Uint64N(benchKeys))
		if err := s.Put(buf, buf); err != nil {
			b.Fatal(err)
		}
		it.Close()
	}
}

func BenchmarkKeyValueScan(b *testing.B) {
	s := filledBenchStore(b)
	b.ReportAllocs()
	for b.Loop() {
		it, err := s.Range(nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for it.Next() {
			n++
		}
		it.Close()
		if n != benchKeys {
			b.Fatal(n)
		}
	}
}

func BenchmarkWindowPutExpire(b *testing.B) {
	s := NewInMemoryWindow("bench")
	var buf []byte
	b.ReportAllocs()
	i := int64(0)
	for b.Loop() {
		buf = benchKey(buf, uint64(i%1000))
		if err := s.Put(buf, ms(i), buf); err != nil {
			b.Fatal(err)
		}
		if i%1000 == 0 {
			if err := s.ExpireBefore(ms(i - 100_000)); err != nil {
				b.Fatal(err)
			}
		}
		i++
	}
}
