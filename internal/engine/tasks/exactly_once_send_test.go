package tasks

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/kafka"
)

func heldRecord(i int) kafka.Record {
	return kafka.Record{Topic: "out", Key: []byte(fmt.Sprint(i)), Value: []byte("v")}
}

// Sends are held in order while a commit runs; past the bound a Send
// waits until the commit releases the records, and the Sends that come
// during the release wait for it, so that no record overtakes one held
// before it.
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
	third := make(chan bool, 1)
	go func() {
		held, err := h.add(ctx, heldRecord(2))
		assert.NoError(t, err)
		third <- held
	}()
	select {
	case <-third:
		t.Fatal("a Send past the bound did not wait")
	case <-time.After(50 * time.Millisecond):
	}
	var sent []string
	require.NoError(t, h.release(func(r kafka.Record) error {
		sent = append(sent, string(r.Key))
		return nil
	}))
	require.Equal(t, []string{"0", "1"}, sent)
	require.False(t, <-third, "the Send that waited goes to the transaction after the records held")
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
	require.ErrorIs(t, h.release(func(kafka.Record) error {
		t.Error("a record held was sent after the failure")
		return nil
	}), ErrRewind)

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

// A held record that fails when released dooms the transaction: the
// records after it are not sent, and Sends fail until the engine rewinds.
func TestHeldSendsReleaseFailureDooms(t *testing.T) {
	ctx := t.Context()
	h := newHeldSends(10, 1<<20)
	h.hold()
	for i := range 3 {
		_, err := h.add(ctx, heldRecord(i))
		require.NoError(t, err)
	}
	boom := fmt.Errorf("%w: refused", ErrRewind)
	var sent []string
	err := h.release(func(r kafka.Record) error {
		sent = append(sent, string(r.Key))
		if len(sent) == 2 {
			return boom
		}
		return nil
	})
	require.ErrorIs(t, err, boom)
	require.Equal(t, []string{"0", "1"}, sent)
	require.ErrorIs(t, h.failed(), boom)
	held, err := h.add(ctx, heldRecord(3))
	require.True(t, held)
	require.ErrorIs(t, err, boom, "a Send after the failed release went to the doomed transaction")
}
