package offsets

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkWritePlan measures one synced WritePlan: the latency a batch
// pays before it can run. The commit that makes the next plan legal is
// written with the timer stopped.
func BenchmarkWritePlan(b *testing.B) {
	_, w := openWAL(b, 0)
	b.ReportAllocs()
	for n := range int64(b.N) {
		require.NoError(b, w.WritePlan(ctx, plan(n)))
		b.StopTimer()
		require.NoError(b, w.WriteCommit(ctx, commit(n)))
		b.StartTimer()
	}
}

// BenchmarkBatchCycle measures a WritePlan and its WriteCommit (two synced
// transactions, the second running retention).
func BenchmarkBatchCycle(b *testing.B) {
	_, w := openWAL(b, 0)
	b.ReportAllocs()
	for n := range int64(b.N) {
		require.NoError(b, w.WritePlan(ctx, plan(n)))
		require.NoError(b, w.WriteCommit(ctx, commit(n)))
	}
}

// BenchmarkAppendEpoch measures one synced AppendEpoch with retention.
func BenchmarkAppendEpoch(b *testing.B) {
	_, w := openWAL(b, 0)
	b.ReportAllocs()
	for n := range int64(b.N) {
		require.NoError(b, w.AppendEpoch(ctx, epoch(n)))
	}
}

// BenchmarkPending measures the read recovery and inspection start with.
func BenchmarkPending(b *testing.B) {
	_, w := openWAL(b, 0)
	for n := range int64(200) {
		require.NoError(b, w.WritePlan(ctx, plan(n)))
		require.NoError(b, w.WriteCommit(ctx, commit(n)))
	}
	require.NoError(b, w.WritePlan(ctx, plan(200)))
	b.ReportAllocs()
	for b.Loop() {
		_, found, err := w.Pending()
		if err != nil || !found {
			b.Fatal(err, found)
		}
	}
}
