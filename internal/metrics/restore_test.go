package metrics

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The runtime's Restored hook feeds weir_restore_duration_seconds{store}
// and weir_restore_records_per_second{store}, the rate of the store's
// last restore.
func TestRestoresObserved(t *testing.T) {
	m := New("app", "continuous", "exactly-once")
	m.Hooks().Restored("counts", 1_000_000, 4*time.Second)
	m.Restored("counts", 300_000, time.Second)
	mfs, err := m.Registry().Gather()
	require.NoError(t, err)
	var observed uint64
	var sum, rate float64
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			switch mf.GetName() {
			case "weir_restore_duration_seconds":
				observed, sum = mt.GetHistogram().GetSampleCount(), mt.GetHistogram().GetSampleSum()
			case "weir_restore_records_per_second":
				rate = mt.GetGauge().GetValue()
			}
		}
	}
	require.EqualValues(t, 2, observed)
	require.InDelta(t, 5.0, sum, 1e-9)
	require.InDelta(t, 300_000, rate, 1e-6, "the last restore's rate")
}
