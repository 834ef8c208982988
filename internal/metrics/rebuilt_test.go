package metrics

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The runtime's StateRebuilt hook, and the App's own call for the
// write-ahead log, feed weir_state_rebuilt_total{what,reason}.
func TestStateRebuiltCounts(t *testing.T) {
	m := New("app", "micro-batch", "exactly-once")
	m.Hooks().StateRebuilt("stores", "checksum")
	m.StateRebuilt("wal", "manifest")
	m.StateRebuilt("wal", "manifest")
	mfs, err := m.Registry().Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "weir_state_rebuilt_total" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range mt.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			got[labels["what"]+"/"+labels["reason"]] = mt.GetCounter().GetValue()
		}
	}
	require.Equal(t, map[string]float64{"stores/checksum": 1, "wal/manifest": 2}, got)
}
