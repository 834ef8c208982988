package offsets

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEpochs(t *testing.T) {
	_, w := openWAL(t, 0)
	_, found, err := w.LatestEpoch()
	require.NoError(t, err)
	require.False(t, found)

	require.NoError(t, w.AppendEpoch(ctx, epoch(1)))
	require.NoError(t, w.AppendEpoch(ctx, epoch(2)))
	require.NoError(t, w.AppendEpoch(ctx, epoch(5)), "gaps are fine")
	require.NoError(t, w.AppendEpoch(ctx, epoch(5)), "an identical retry is fine")

	latest, found, err := w.LatestEpoch()
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, epoch(5), latest)

	err = w.AppendEpoch(ctx, epoch(4))
	require.ErrorIs(t, err, ErrConflict)
	require.EqualError(t, err, "offsets: conflict: epoch 4 is not after the latest epoch 5")
	changed := epoch(5)
	changed.Offsets[0].Next++
	require.ErrorIs(t, w.AppendEpoch(ctx, changed), ErrConflict)
	require.ErrorIs(t, w.AppendEpoch(ctx, epoch(1)), ErrConflict)

	var got []Epoch
	require.NoError(t, w.Epochs(ctx, func(e Epoch) error { got = append(got, e); return nil }))
	require.Equal(t, []Epoch{epoch(1), epoch(2), epoch(5)}, got)

	// The epoch log and the batch log of a namespace do not interfere.
	require.NoError(t, w.WritePlan(ctx, plan(0)))
	latest, _, err = w.LatestEpoch()
	require.NoError(t, err)
	require.Equal(t, int64(5), latest.Epoch)
}

func TestEpochRetention(t *testing.T) {
	_, w := openWAL(t, 3)
	for _, n := range []int64{1, 2, 5, 9, 10, 30} {
		require.NoError(t, w.AppendEpoch(ctx, epoch(n)))
	}
	var got []int64
	require.NoError(t, w.Epochs(ctx, func(e Epoch) error { got = append(got, e.Epoch); return nil }))
	require.Equal(t, []int64{9, 10, 30}, got, "the last 3 by count, not by number")
}

func TestEpochsPages(t *testing.T) {
	_, w := openWAL(t, 1000)
	const total = pageSize + 1
	for n := range int64(total) {
		require.NoError(t, w.AppendEpoch(ctx, epoch(n)))
	}
	var got []int64
	require.NoError(t, w.Epochs(ctx, func(e Epoch) error { got = append(got, e.Epoch); return nil }))
	require.Len(t, got, total)
	require.Equal(t, int64(total-1), got[total-1])
}
