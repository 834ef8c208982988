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

// windowedCounts builds clicks → per-user counts in windows w, written to
// "counts" as "user@start" → count.
func windowedCounts(t *testing.T, w topology.Windows, opts ...topology.Option) *topologytest.Driver {
	t.Helper()
	b := topology.NewBuilder()
	clicks := topology.NewStream(b, "clicks", serde.String(), serde.String())
	counts := topology.WindowedBy(clicks.GroupByKey(), w).Count(append(opts, topology.Materialized("clicks-per-window"))...)
	topology.Map(counts.ToStream(), func(k topology.Windowed[string], n int64) (string, int64) {
		return k.String(), n
	}).To("counts")
	topo, err := b.Build()
	require.NoError(t, err)
	d, err := topologytest.New(topo, topologytest.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	return d
}

type click struct {
	user string
	at   int64
}

func pipeClicks(t *testing.T, d *topologytest.Driver, clicks ...click) {
	t.Helper()
	in := topologytest.Input(d, "clicks", serde.String(), serde.String())
	for _, c := range clicks {
		require.NoError(t, in.Pipe(c.user, "click", ms(c.at)))
	}
}

func readCounts(t *testing.T, d *topologytest.Driver) []processor.KeyValue[string, int64] {
	t.Helper()
	got, err := topologytest.Output(d, "counts", serde.String(), serde.Int64()).ReadKeyValues()
	require.NoError(t, err)
	return got
}

type kv = processor.KeyValue[string, int64]

func TestTumblingWindowLateRecordsDroppedAndCounted(t *testing.T) {
	d := windowedCounts(t, topology.TumblingWindows(10*time.Millisecond).WithGrace(5*time.Millisecond))
	pipeClicks(t, d,
		click{"ann", 1}, click{"ann", 9}, click{"bob", 12},
		click{"ann", 14}, // stream time 14: window [0,10) still open (10+5 > 14)
		click{"ann", 3},  // late but within grace: counted in [0,10)
		click{"bob", 16}, // stream time 16: [0,10) closes (10+5 ≤ 16)
		click{"ann", 5},  // too late: dropped and counted
		click{"bob", 25},
	)
	require.Equal(t, []kv{
		{Key: "ann@[0,10)", Value: 1}, {Key: "ann@[0,10)", Value: 2}, {Key: "bob@[10,20)", Value: 1},
		{Key: "ann@[10,20)", Value: 1}, {Key: "ann@[0,10)", Value: 3}, {Key: "bob@[10,20)", Value: 2},
		{Key: "bob@[20,30)", Value: 1},
	}, readCounts(t, d))
	require.Equal(t, int64(1), d.Counters()[processor.MetricDroppedLate])
}

func TestHoppingWindows(t *testing.T) {
	d := windowedCounts(t, topology.HoppingWindows(10*time.Millisecond, 5*time.Millisecond).WithGrace(100*time.Millisecond))
	pipeClicks(t, d, click{"ann", 7}, click{"ann", 12})
	require.Equal(t, []kv{
		{Key: "ann@[0,10)", Value: 1}, {Key: "ann@[5,15)", Value: 1},
		{Key: "ann@[5,15)", Value: 2}, {Key: "ann@[10,20)", Value: 1},
	}, readCounts(t, d))
}

func TestEmitFinalEmitsOncePerClosedWindow(t *testing.T) {
	d := windowedCounts(t, topology.TumblingWindows(10*time.Millisecond).WithGrace(2*time.Millisecond), topology.EmitFinal())
	pipeClicks(t, d, click{"ann", 1}, click{"bob", 2}, click{"ann", 5}, click{"ann", 11})
	require.Empty(t, readCounts(t, d), "no window has closed yet")
	pipeClicks(t, d, click{"bob", 12}) // stream time 12: [0,10) closes
	require.Equal(t, []kv{{Key: "ann@[0,10)", Value: 2}, {Key: "bob@[0,10)", Value: 1}}, readCounts(t, d))
	pipeClicks(t, d, click{"ann", 13}, click{"ann", 40})
	require.Equal(t, []kv{{Key: "ann@[10,20)", Value: 2}, {Key: "bob@[10,20)", Value: 1}}, readCounts(t, d))
}

func TestSlidingWindows(t *testing.T) {
	d := windowedCounts(t, topology.SlidingWindows(10*time.Millisecond).WithGrace(100*time.Millisecond))
	pipeClicks(t, d, click{"ann", 10}, click{"ann", 15}, click{"ann", 30}, click{"ann", 12})
	// As Kafka Streams' sliding windows (issue 21): windows include both
	// ends, and each record also has the window starting just after it.
	require.Equal(t, []kv{
		{Key: "ann@[0,10)", Value: 1},  // window [0,10] ending at the first record
		{Key: "ann@[11,21)", Value: 1}, // 15 starts the window right after 10
		{Key: "ann@[5,15)", Value: 2},  // [5,15] holds 10 and 15
		{Key: "ann@[20,30)", Value: 1}, // 30 is alone
		{Key: "ann@[11,21)", Value: 2}, // 12 joins the window right after 10
		{Key: "ann@[5,15)", Value: 3},  // and the window ending at 15
		{Key: "ann@[2,12)", Value: 2},  // and gets its own window [2,12]: 10 and 12
		{Key: "ann@[13,23)", Value: 1}, // and the window right after it: 15
	}, readCounts(t, d))
}

// TestSlidingWindowEndingAtCloseTime: the window ending exactly at the
// close time still takes records (ends are inclusive), so the record that
// defines it must still be in the store: here the window [1021,1031],
// right after the record at 1020, when the close time is 1036 - 5.
func TestSlidingWindowEndingAtCloseTime(t *testing.T) {
	d := windowedCounts(t, topology.SlidingWindows(10*time.Millisecond).WithGrace(5*time.Millisecond))
	pipeClicks(t, d, click{"ann", 1020}, click{"ann", 1036}, click{"ann", 1025})
	require.Equal(t, []kv{
		{Key: "ann@[1010,1020)", Value: 1},
		{Key: "ann@[1026,1036)", Value: 1},
		// 1025's own window [1015,1025] closed at 1031; the window
		// right after 1020 ends at 1031 and is open.
		{Key: "ann@[1021,1031)", Value: 1},
	}, readCounts(t, d))
	require.Equal(t, int64(1), d.Counters()[processor.MetricDroppedLate])
}

// TestWindowResultTimestamps pins Kafka Streams' timestamps (issue 21): a
// window's update carries the largest record timestamp in the window, and
// so does its final result.
func TestWindowResultTimestamps(t *testing.T) {
	stamps := func(d *topologytest.Driver) []int64 {
		recs, err := topologytest.Output(d, "counts", serde.String(), serde.Int64()).ReadRecords()
		require.NoError(t, err)
		var out []int64
		for _, r := range recs {
			out = append(out, r.Timestamp.UnixMilli())
		}
		return out
	}
	d := windowedCounts(t, topology.TumblingWindows(10*time.Millisecond).WithGrace(20*time.Millisecond))
	pipeClicks(t, d, click{"ann", 1008}, click{"ann", 1004})
	require.Equal(t, []int64{1008, 1008}, stamps(d), "the update after 1004 carries 1008")

	d = windowedCounts(t, topology.TumblingWindows(10*time.Millisecond), topology.EmitFinal())
	pipeClicks(t, d, click{"ann", 1007}, click{"ann", 1003}, click{"ann", 1010})
	require.Equal(t, []int64{1007}, stamps(d), "the final result carries 1007, not the window end")
}

func TestSessionWindows(t *testing.T) {
	b := topology.NewBuilder()
	clicks := topology.NewStream(b, "clicks", serde.String(), serde.String())
	sessions := topology.SessionWindowedBy(clicks.GroupByKey(), topology.SessionWindowsWithGap(5*time.Millisecond).WithGrace(100*time.Millisecond)).
		Count(topology.Materialized("sessions"))
	// SelectKey, unlike Map, leaves values alone, so deletes stay tombstones.
	topology.SelectKey(sessions.ToStream(), func(k topology.Windowed[string], _ int64) string {
		return k.String()
	}).To("counts")
	topo, err := b.Build()
	require.NoError(t, err)
	d, err := topologytest.New(topo, topologytest.Config{})
	require.NoError(t, err)
	defer d.Close()
	pipeClicks(t, d, click{"ann", 1}, click{"ann", 4}, click{"ann", 20}, click{"ann", 12})
	out, err := topologytest.Output(d, "counts", serde.String(), serde.Int64()).ReadRecords()
	require.NoError(t, err)
	type rec struct {
		key       string
		n         int64
		tombstone bool
	}
	var got []rec
	for _, r := range out {
		got = append(got, rec{r.Key, r.Value, r.Tombstone})
	}
	require.Equal(t, []rec{
		{"ann@[1,1)", 1, false},
		{"ann@[1,1)", 0, true}, {"ann@[1,4)", 2, false}, // 4 extends the session
		{"ann@[20,20)", 1, false},
		{"ann@[12,12)", 1, false}, // 12 is more than 5 from 4 and from 20
	}, got)
	pipeClicks(t, d, click{"ann", 8})
	out, err = topologytest.Output(d, "counts", serde.String(), serde.Int64()).ReadRecords()
	require.NoError(t, err)
	got = got[:0]
	for _, r := range out {
		got = append(got, rec{r.Key, r.Value, r.Tombstone})
	}
	// 8 bridges [1,4] and [12,12] into one session.
	require.Equal(t, []rec{{"ann@[1,4)", 0, true}, {"ann@[12,12)", 0, true}, {"ann@[1,12)", 4, false}}, got)
}

// TestSessionLatenessAndTimestamps pins Kafka Streams' session rules (issue
// 21): a session closes when stream time passes its end + gap + grace, and
// results and merge tombstones carry the session end.
func TestSessionLatenessAndTimestamps(t *testing.T) {
	b := topology.NewBuilder()
	clicks := topology.NewStream(b, "clicks", serde.String(), serde.String())
	sessions := topology.SessionWindowedBy(clicks.GroupByKey(), topology.SessionWindowsWithGap(10*time.Millisecond)).
		Count(topology.Materialized("sessions"))
	topology.SelectKey(sessions.ToStream(), func(k topology.Windowed[string], _ int64) string { return k.String() }).To("counts")
	topo, err := b.Build()
	require.NoError(t, err)
	d, err := topologytest.New(topo, topologytest.Config{})
	require.NoError(t, err)
	defer d.Close()
	// At stream time 1015 sessions ending before 1005 are closed: the
	// record at 1008 is not late (weir dropped it before: 1008 < 1015-0).
	pipeClicks(t, d, click{"ann", 1000}, click{"bob", 1015}, click{"ann", 1008}, click{"ann", 1001})
	recs, err := topologytest.Output(d, "counts", serde.String(), serde.Int64()).ReadRecords()
	require.NoError(t, err)
	type rec struct {
		key string
		n   int64
		ts  int64
	}
	var got []rec
	for _, r := range recs {
		got = append(got, rec{r.Key, r.Value, r.Timestamp.UnixMilli()})
	}
	require.Equal(t, []rec{
		{"ann@[1000,1000)", 1, 1000},
		{"bob@[1015,1015)", 1, 1015},
		{"ann@[1008,1008)", 1, 1008}, // [1000,1000] is closed: a new session
		{"ann@[1008,1008)", 0, 1008}, // merged into [1001,1008]: a tombstone at its end
		{"ann@[1001,1008)", 2, 1008},
	}, got)
	require.Zero(t, d.Counters()[processor.MetricDroppedLate])
}
