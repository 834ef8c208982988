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
