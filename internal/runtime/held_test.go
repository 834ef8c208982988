package runtime

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/kafka"
)

func heldRecord(i int) kafka.Record {
	return kafka.Record{Topic: "out", Key: []byte(fmt.Sprint(i)), Value: []byte("v")}
}

// Sends are held in order while a commit runs; past the bound a Send
// waits until the commit takes the records, and the holding ends only
// once none is left, so that no record overtakes one held before it.
func TestHeldSendsKeepOrderWithinTheBound(t *testing.T) {
	ctx := t.Context()
	h := newHeldSends(2, 1<<20)
	held, err := h.add(ctx, heldRecord(0))
	require.NoError(t, err)
	require.False(t, held, "nothing is held outside a commit")

	h.hold()
	for i := range 2 {
		held, err := h.add(ctx, heldRecord(i))
		require.NoError(t, err)
		require.True(t, held)
	}
	third := make(chan error, 1)
	go func() {
		_, err := h.add(ctx, heldRecord(2))
		third <- err
	}()
	select {
	case <-third:
		t.Fatal("a Send past the bound did not wait")
	case <-time.After(50 * time.Millisecond):
	}
	var sent []string
	recs, done := h.take()
	require.False(t, done)
	for _, r := range recs {
		sent = append(sent, string(r.Key))
	}
	require.NoError(t, <-third, "taking the records makes room")
	recs, done = h.take()
	require.False(t, done)
	for _, r := range recs {
		sent = append(sent, string(r.Key))
	}
	_, done = h.take()
	require.True(t, done)
	require.Equal(t, []string{"0", "1", "2"}, sent)
	held, err = h.add(ctx, heldRecord(3))
	require.NoError(t, err)
	require.False(t, held, "the holding ended")
}

// A Send waiting for room (it holds the engine's barrier shared) wakes
// when the commit fails, with the failure: the rewind that needs the
// barrier is never deadlocked. Every Send fails until the engine has
// rewound, and the records held are dropped.
func TestHeldSendsWakeOnFailure(t *testing.T) {
	ctx := t.Context()
	h := newHeldSends(1, 1<<20)
	h.hold()
	_, err := h.add(ctx, heldRecord(0))
	require.NoError(t, err)
	waiting := make(chan error, 1)
	go func() {
		_, err := h.add(ctx, heldRecord(1))
		waiting <- err
	}()
	time.Sleep(20 * time.Millisecond)
	boom := fmt.Errorf("%w: aborted", ErrRewind)
	h.fail(boom)
	select {
	case err := <-waiting:
		require.ErrorIs(t, err, ErrRewind)
	case <-time.After(10 * time.Second):
		t.Fatal("a waiting Send was not woken by the failure")
	}
	held, err := h.add(ctx, heldRecord(2))
	require.True(t, held)
	require.ErrorIs(t, err, ErrRewind, "a Send after the failure went to the transaction")
	recs, done := h.take()
	require.True(t, done)
	require.Empty(t, recs, "the records held were not dropped")

	h.clear() // the engine rewound
	held, err = h.add(ctx, heldRecord(3))
	require.NoError(t, err)
	require.False(t, held)
}

// A Send waiting for room returns when its context ends.
func TestHeldSendsWaitEndsWithTheContext(t *testing.T) {
	h := newHeldSends(1, 1<<20)
	h.hold()
	_, err := h.add(t.Context(), heldRecord(0))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	_, err = h.add(ctx, heldRecord(1))
	require.True(t, errors.Is(err, context.DeadlineExceeded), "got %v", err)
}
