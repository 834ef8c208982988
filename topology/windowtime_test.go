package topology_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
	"github.com/weirstream/weir/topologytest"
)

// A record late before a restart is late after it: the aggregation's time
// comes back from <store>-stream-time with the window store, so the output
// does not depend on where the application restarted.
func TestWindowedLatenessSurvivesARestart(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    topology.Windows
	}{
		{"tumbling", topology.TumblingWindows(10 * time.Millisecond).WithGrace(5 * time.Millisecond)},
		{"hopping", topology.HoppingWindows(10*time.Millisecond, 5*time.Millisecond).WithGrace(5 * time.Millisecond)},
		{"sliding", topology.SlidingWindows(10 * time.Millisecond).WithGrace(5 * time.Millisecond)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := topology.NewBuilder()
			clicks := topology.NewStream(b, "clicks", serde.String(), serde.String())
			counts := topology.WindowedBy(clicks.GroupByKey(), tc.w).Count(topology.Materialized("per-window"))
			topology.Map(counts.ToStream(), func(k topology.Windowed[string], n int64) (string, int64) {
				return k.String(), n
			}).To("counts")
			topo, err := b.Build()
			require.NoError(t, err)
			d, err := topologytest.New(topo, topologytest.Config{ApplicationID: "app"})
			require.NoError(t, err)
			in := topologytest.Input(d, "clicks", serde.String(), serde.String())
			require.NoError(t, in.Pipe("ann", "x", ms(100)))
			require.NoError(t, in.Pipe("bob", "x", ms(200))) // ann's windows close

			d, err = d.Restart()
			require.NoError(t, err)
			defer d.Close()
			before := len(d.Topic("counts"))
			require.NoError(t, topologytest.Input(d, "clicks", serde.String(), serde.String()).Pipe("ann", "x", ms(101)))
			require.Len(t, d.Topic("counts")[before:], 0, "ann@101 was late before the restart")
			require.Positive(t, d.Counters()[processor.MetricDroppedLate])
			require.Contains(t, d.Topics(), "app-per-window-stream-time-changelog")
		})
	}
}
