package status_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/status"
)

// A sample reads weir's own metrics: commits by result, phases, rebalances
// and rewinds, fed the way the runtime feeds them.
func TestReadTakesWeirsMetrics(t *testing.T) {
	m := metrics.New("app", "continuous", "exactly-once")
	now := time.UnixMilli(1_700_000_000_000)
	s, err := status.Read(m.Registry(), now)
	require.NoError(t, err)
	require.Equal(t, now.UnixMilli(), s.Time)
	require.Zero(t, s.Commits)
	require.Empty(t, s.Lag)

	h := m.Hooks()
	h.Committed(10*time.Millisecond, nil)
	h.Committed(20*time.Millisecond, nil)
	h.Committed(time.Second, errors.New("aborted"))
	h.Phase("txn_commit", 4*time.Millisecond)
	h.Phase("txn_commit", 6*time.Millisecond)
	h.Phase("paused", time.Millisecond)
	h.Rebalanced(3)
	h.Rewound("abortable", errors.New("x"))
	h.Rewound("member_gone", errors.New("y"))

	s, err = status.Read(m.Registry(), now.Add(time.Second))
	require.NoError(t, err)
	require.Equal(t, 2.0, s.Commits)
	require.Equal(t, 1.0, s.Failed)
	require.Equal(t, 1.0, s.Rebalances)
	require.Equal(t, 2.0, s.Rewinds)
	require.Equal(t, 1.0, s.Aborts, "a member_gone rewind aborts no transaction")
	require.InDelta(t, 0.010, s.Phases["txn_commit"][0], 1e-9)
	require.Equal(t, 2.0, s.Phases["txn_commit"][1])
	require.Equal(t, 1.0, s.Phases["paused"][1])
}

func TestSeriesKeepsItsWindow(t *testing.T) {
	ss := status.NewSeries(10 * time.Second)
	for i := int64(0); i <= 30; i++ {
		ss.Add(status.Sample{Time: i * 1000})
	}
	got := ss.Samples()
	require.Len(t, got, 11)
	require.Equal(t, int64(20_000), got[0].Time)
	require.Equal(t, int64(30_000), got[10].Time)
}

func TestEventsKeepTheLast(t *testing.T) {
	e := status.NewEvents(3)
	for i := range 5 {
		e.Add(time.UnixMilli(int64(i)), "state", string(rune('a'+i)))
	}
	got := e.List()
	require.Len(t, got, 3)
	require.Equal(t, "c", got[0].Text)
	require.Equal(t, "e", got[2].Text)
	var none *status.Events
	none.Add(time.Now(), "state", "ignored")
	require.Empty(t, none.List())
}
