package kafka

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// take waits while every place is out, until a put, its done or its stop.
func TestInflightWaitsForRoom(t *testing.T) {
	f := newInflight(2)
	never := make(chan struct{})
	errStop := errors.New("stopped")
	require.NoError(t, f.take(never, nil, never, errStop))
	require.NoError(t, f.take(never, nil, never, errStop))

	got := make(chan error, 1)
	go func() { got <- f.take(never, nil, never, errStop) }()
	select {
	case err := <-got:
		t.Fatalf("took a third place of two: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	f.put()
	require.NoError(t, <-got)
	require.Equal(t, int64(2), f.n.Load())

	ctx, cancel := context.WithCancel(context.Background())
	go func() { got <- f.take(ctx.Done(), ctx.Err, never, errStop) }()
	cancel()
	require.ErrorIs(t, <-got, context.Canceled)

	stop := make(chan struct{})
	go func() { got <- f.take(never, nil, stop, errStop) }()
	close(stop)
	require.ErrorIs(t, <-got, errStop)
	require.Equal(t, int64(2), f.n.Load(), "a take that gave up holds nothing")
	require.Zero(t, f.waiters.Load())
}

// Many takers and one putter (the promise goroutine): the bound holds at
// every moment, and no taker is left waiting once places are free.
func TestInflightBoundUnderLoad(t *testing.T) {
	const max, takers, each = 8, 16, 2000
	f := newInflight(max)
	never := make(chan struct{})
	out := make(chan struct{}, takers*each)
	var held, peak atomic.Int64
	var wg sync.WaitGroup
	for range takers {
		wg.Go(func() {
			for range each {
				require.NoError(t, f.take(never, nil, never, nil))
				if n := held.Add(1); n > peak.Load() {
					peak.Store(n)
				}
				out <- struct{}{}
			}
		})
	}
	for range takers * each {
		<-out
		held.Add(-1)
		f.put()
	}
	wg.Wait()
	require.LessOrEqual(t, peak.Load(), int64(max))
	require.Zero(t, f.n.Load())
}
