package statestore

import (
	"encoding/binary"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestConcurrentReaders runs one writer and several readers (interactive
// queries) against each store; run it with -race. The goroutines use assert,
// not require: FailNow must be called from the test goroutine.
func TestConcurrentReaders(t *testing.T) {
	const (
		readers = 4
		writes  = 3000
		keys    = 200
	)
	key := func(i int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(i%keys)) }

	t.Run("key-value", func(t *testing.T) {
		s := NewInMemoryKeyValue("kv")
		runConcurrently(t, readers, func() {
			for i := range writes {
				assert.NoError(t, s.Put(key(i), key(i)))
				if i%7 == 0 {
					assert.NoError(t, s.Delete(key(i+1)))
				}
			}
		}, func(stop <-chan struct{}) {
			buf := make([]byte, 4)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				binary.BigEndian.PutUint32(buf, uint32(i%keys))
				if v, ok, err := s.Get(buf); err == nil && ok {
					assert.Equal(t, buf, v)
				}
				it, err := s.Range(key(10), key(50))
				assert.NoError(t, err)
				prev := []byte(nil)
				for it.Next() {
					assert.Equal(t, it.Key(), it.Value())
					assert.Less(t, string(prev), string(it.Key()))
					prev = it.Key()
				}
				assert.NoError(t, it.Err())
				assert.NoError(t, it.Close())
				_, err = s.ApproximateNumEntries()
				assert.NoError(t, err)
			}
		})
	})

	t.Run("window", func(t *testing.T) {
		s := NewInMemoryWindow("w")
		runConcurrently(t, readers, func() {
			for i := range writes {
				assert.NoError(t, s.Put(key(i), ms(int64(i)), []byte("v")))
				if i%100 == 0 {
					assert.NoError(t, s.ExpireBefore(ms(int64(i-500))))
				}
			}
		}, func(stop <-chan struct{}) {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_, _, err := s.Get(key(i), ms(int64(i)))
				assert.NoError(t, err)
				for _, open := range []func() (WindowIterator, error){
					func() (WindowIterator, error) { return s.Fetch(key(i), ms(0), ms(writes)) },
					func() (WindowIterator, error) { return s.FetchAll(ms(int64(i)), ms(int64(i+100))) },
				} {
					it, err := open()
					assert.NoError(t, err)
					for it.Next() {
						assert.Equal(t, []byte("v"), it.Value())
					}
					assert.NoError(t, it.Err())
					assert.NoError(t, it.Close())
				}
			}
		})
	})

	t.Run("session", func(t *testing.T) {
		s := NewInMemorySession("s")
		runConcurrently(t, readers, func() {
			for i := range writes {
				start := int64(i)
				assert.NoError(t, s.Put(key(i), ms(start), ms(start+5), []byte("v")))
				if i%3 == 0 {
					assert.NoError(t, s.Remove(key(i), ms(start), ms(start+5)))
				}
				if i%100 == 0 {
					assert.NoError(t, s.ExpireBefore(ms(start-500)))
				}
			}
		}, func(stop <-chan struct{}) {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				it, err := s.FindSessions(key(i), ms(0), ms(writes))
				assert.NoError(t, err)
				for it.Next() {
					assert.False(t, it.End().Before(it.Start()))
				}
				assert.NoError(t, it.Err())
				assert.NoError(t, it.Close())
			}
		})
	})
}

// runConcurrently runs write in one goroutine and read in n others until
// write returns.
func runConcurrently(t *testing.T, n int, write func(), read func(stop <-chan struct{})) {
	t.Helper()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { read(stop) })
	}
	wg.Go(func() {
		defer close(stop)
		write()
	})
	wg.Wait()
}
