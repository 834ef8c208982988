package metrics

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The runtime's Phase hook feeds weir_epoch_phase_seconds{phase}.
func TestPhaseHookFeedsTheHistogram(t *testing.T) {
	m := New("app", "continuous", "at-least-once")
	h := m.Hooks()
	h.Phase("producer_flush", 30*time.Millisecond)
	h.Phase("producer_flush", 10*time.Millisecond)
	h.Phase("paused", time.Millisecond)
	mfs, err := m.Registry().Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "weir_epoch_phase_seconds" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "phase" && l.GetValue() == "producer_flush" {
					require.Equal(t, uint64(2), mt.GetHistogram().GetSampleCount())
					require.InDelta(t, 0.04, mt.GetHistogram().GetSampleSum(), 1e-9)
					return
				}
			}
		}
	}
	t.Fatal("no weir_epoch_phase_seconds{phase=\"producer_flush\"}")
}

// weir_commit_duration_seconds is on /metrics from the start, with a count
// of 0 per result, not only once a commit happened: an instance that has
// had nothing to commit yet (it joined after the input was processed, say)
// still shows the metric, as weir_state does.
func TestCommitHistogramExistsBeforeTheFirstCommit(t *testing.T) {
	m := New("app", "continuous", "exactly-once")
	mfs, err := m.Registry().Gather()
	require.NoError(t, err)
	results := map[string]uint64{}
	for _, mf := range mfs {
		if mf.GetName() != "weir_commit_duration_seconds" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "result" {
					results[l.GetValue()] = mt.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	require.Equal(t, map[string]uint64{"committed": 0, "failed": 0}, results)
}
