package tasks

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/kafka"
)

// What becomes of an epoch whose commit behind failed is the committer's
// decision: at-least-once keeps its layers for the next commit when its
// outputs may have been acknowledged but its offsets were not committed
// (ErrCommitLater) or a stop cut the commit short, and discards them when
// it rewinds; exactly-once never keeps them, and dooms the next epoch's
// cut until the engine has rewound (dropHeld).
func TestCommitterBehindFailed(t *testing.T) {
	stopped, stop := context.WithCancel(context.Background())
	stop()
	later := fmt.Errorf("%w: coordinator moved", ErrCommitLater)
	rewind := fmt.Errorf("%w: member gone", ErrRewind)
	cut := fmt.Errorf("runtime: offset commit: %w", stopped.Err())
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		keep bool
	}{
		{"commit later", context.Background(), later, true},
		{"cut short by a stop", stopped, cut, true},
		{"rewind", context.Background(), rewind, false},
		{"rewind while stopping", stopped, rewind, false},
		{"fatal", context.Background(), errors.New("runtime: flush outputs: topic gone"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			alo := &atLeastOnce{}
			require.Equal(t, tc.keep, alo.behindFailed(tc.ctx, tc.err))
			require.NoError(t, alo.startCut(context.Background()), "at-least-once: no cut is doomed")

			eo := &txnOutput{held: newHeldSends(heldRecords, heldBytes)}
			require.False(t, eo.behindFailed(tc.ctx, tc.err), "exactly-once keeps no layer")
			require.ErrorIs(t, eo.startCut(context.Background()), tc.err, "the next cut is doomed")
			_, err := eo.held.add(context.Background(), kafka.Record{Topic: "t"})
			require.ErrorIs(t, err, tc.err, "so is every Send until the rewind")
			eo.dropHeld()
			require.NoError(t, eo.startCut(context.Background()), "rewound")
		})
	}
}

// The traits the continuous engine reads from a cut: an exactly-once
// commit behind finishes after a stop (its outcome is otherwise unknown)
// and holds the claims' Sends, so the engine needs no bound of its own; an
// at-least-once one does neither, and a stateless at-least-once epoch is
// cut by its positions alone.
func TestCommitterTraits(t *testing.T) {
	alo := &atLeastOnce{}
	eo := &txnOutput{held: newHeldSends(heldRecords, heldBytes)}
	require.Zero(t, alo.traits().stopGrace)
	require.Equal(t, commitStopGrace, eo.traits().stopGrace)
	require.False(t, alo.traits().holdsSends)
	require.True(t, eo.traits().holdsSends)
	require.True(t, alo.traits().positionsAlone)
	require.False(t, eo.traits().positionsAlone)
	now, err := eo.changelogsAtCut(context.Background(), &Phases{}, 3)
	require.NoError(t, err)
	require.True(t, now, "exactly-once: the changelog records go into the open transaction at the cut")

	eo.endCut()
	held, err := eo.held.add(context.Background(), kafka.Record{Topic: "t"})
	require.NoError(t, err)
	require.True(t, held, "after an exactly-once cut the Sends are held for the next transaction")
}
