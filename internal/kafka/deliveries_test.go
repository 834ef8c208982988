package kafka

import (
	"errors"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Acknowledgements arrive out of order across partitions: a Flush waits
// for every record registered before it, and only for those.
func TestDeliveriesOutOfOrder(t *testing.T) {
	var d deliveries
	d.init()
	require.True(t, closed(d.waitFor()), "nothing in flight")
	var seqs []uint64
	for range 5 {
		seqs = append(seqs, d.register())
	}
	w5 := d.waitFor()
	six := d.register()
	w6 := d.waitFor()
	d.complete(seqs[4], nil)
	d.complete(seqs[1], nil)
	d.complete(seqs[2], nil)
	require.False(t, closed(w5))
	d.complete(seqs[0], nil)
	require.False(t, closed(w5), "record 4 is still in flight")
	require.Equal(t, uint64(4), d.base)
	d.complete(seqs[3], errors.New("boom"))
	require.True(t, closed(w5))
	require.False(t, closed(w6), "a record sent after the first waitFor")
	d.complete(six, nil)
	require.True(t, closed(w6))
	require.Empty(t, d.done)
	require.EqualError(t, d.takeErr(), "boom")
	require.NoError(t, d.takeErr())
	d.complete(0, nil)       // a message without a sequence number
	d.complete(seqs[0], nil) // already complete: ignored
	require.Equal(t, uint64(7), d.base)
}

// Many records completed in random order (a window that slides and grows)
// end with every waiter released and nothing left in the window.
func TestDeliveriesRandomOrder(t *testing.T) {
	var d deliveries
	d.init()
	r := rand.New(rand.NewSource(1))
	var pending []uint64
	var waits []<-chan struct{}
	for round := range 200 {
		for range r.Intn(50) {
			pending = append(pending, d.register())
		}
		waits = append(waits, d.waitFor())
		r.Shuffle(len(pending), func(i, j int) { pending[i], pending[j] = pending[j], pending[i] })
		k := r.Intn(len(pending) + 1)
		if round == 199 {
			k = len(pending)
		}
		for _, s := range pending[:k] {
			d.complete(s, nil)
		}
		pending = pending[k:]
	}
	for i, w := range waits {
		require.True(t, closed(w), "waiter %d", i)
	}
	require.Empty(t, d.done)
	require.Equal(t, d.next.Load(), d.base)
}
