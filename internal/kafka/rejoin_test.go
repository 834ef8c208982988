package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A rejoin waits for the commit in flight; a commit that comes while the
// member rejoins waits for its next generation, and reads it.
func TestRejoinGateOrdersCommitsAndRejoins(t *testing.T) {
	g := newRejoinGate(time.Minute, time.Minute)
	ctx := context.Background()
	gen, release := g.hold(ctx)
	require.Equal(t, int32(-1), gen)

	closed := make(chan time.Duration)
	pendings := make(chan int, 1)
	go func() {
		waited, pending := g.close()
		pendings <- pending
		closed <- waited
	}()
	select {
	case <-closed:
		t.Fatal("the rejoin did not wait for the commit in flight")
	case <-time.After(50 * time.Millisecond):
	}
	release()
	release() // idempotent
	require.Zero(t, <-pendings)
	require.Positive(t, <-closed)

	held := make(chan int32)
	go func() {
		gen, release := g.hold(ctx)
		release()
		held <- gen
	}()
	select {
	case <-held:
		t.Fatal("a commit took the generation while the member rejoined")
	case <-time.After(50 * time.Millisecond):
	}
	g.open(7)
	require.Equal(t, int32(7), <-held)

	// Open, a commit passes at once; a closed gate with nothing in
	// flight closes at once.
	gen, release = g.hold(ctx)
	release()
	require.Equal(t, int32(7), gen)
	waited, pending := g.close()
	require.Zero(t, waited)
	require.Zero(t, pending)
	g.open(-1) // a lost membership: the generation stays the last known
	gen, release = g.hold(ctx)
	release()
	require.Equal(t, int32(7), gen)
}

// Both waits are bounded: a commit stuck in flight does not keep the
// member from rejoining, a join that does not end does not keep a commit
// (which the broker then fences if its generation is over) waiting; a
// commit's ctx ends its wait; after shutdown nothing waits.
func TestRejoinGateWaitsAreBounded(t *testing.T) {
	g := newRejoinGate(20*time.Millisecond, 20*time.Millisecond)
	ctx := context.Background()
	_, stuck := g.hold(ctx)
	waited, pending := g.close()
	require.GreaterOrEqual(t, waited, 20*time.Millisecond)
	require.Equal(t, 1, pending)

	start := time.Now()
	_, release := g.hold(ctx)
	require.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)
	release()
	stuck()

	g = newRejoinGate(time.Minute, time.Minute)
	g.close()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, release = g.hold(cctx)
	release()

	g.shutdown()
	start = time.Now()
	_, release = g.hold(ctx)
	release()
	_, release = g.hold(ctx)
	waited, pending = g.close() // after shutdown: never closes
	require.Zero(t, waited)
	require.Zero(t, pending)
	release()
	_, release = g.hold(ctx)
	release()
	require.Less(t, time.Since(start), time.Second)
}
