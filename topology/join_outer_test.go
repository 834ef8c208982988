package topology_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore"
	"github.com/weirstream/weir/topology"
	"github.com/weirstream/weir/topologytest"
)

// outerJoinTopology builds views ⟕ clicks (left) and views ⟗ clicks
// (outer), 10 ms apart at most, with 5 ms of grace.
func outerJoinTopology(t *testing.T) *topology.Topology {
	t.Helper()
	b := topology.NewBuilder()
	views := topology.NewStream(b, "views", serde.String(), serde.String())
	clicks := topology.NewStream(b, "clicks", serde.String(), serde.String())
	w := topology.JoinTimeDifference(10 * time.Millisecond).WithGrace(5 * time.Millisecond)
	topology.LeftJoinStreams(views, clicks, func(_ string, v, c string, found bool) string {
		if !found {
			return v + "+none"
		}
		return v + "+" + c
	}, w).To("left")
	topology.OuterJoinStreams(views, clicks, func(_ string, v, c string, ok1, ok2 bool) string {
		if !ok1 {
			v = "none"
		}
		if !ok2 {
			c = "none"
		}
		return v + "+" + c
	}, w).To("outer")
	topo, err := b.Build()
	require.NoError(t, err)
	return topo
}

func TestLeftAndOuterJoinStreams(t *testing.T) {
	d, err := topologytest.New(outerJoinTopology(t), topologytest.Config{})
	require.NoError(t, err)
	defer d.Close()
	vIn := topologytest.Input(d, "views", serde.String(), serde.String())
	cIn := topologytest.Input(d, "clicks", serde.String(), serde.String())
	require.NoError(t, vIn.Pipe("ad", "v1", ms(100)))
	require.NoError(t, cIn.Pipe("ad", "c1", ms(105)))                  // joins v1
	require.NoError(t, vIn.Pipe("ad2", "v2", ms(106)))                 // waits
	require.NoError(t, cIn.Pipe("ad3", "c2", ms(107)))                 // waits (outer)
	require.NoError(t, vIn.Pipe("x", "v3", ms(121)))                   // 106+10+5 = 121: still open
	require.NoError(t, d.PipeRaw("views", nil, []byte("v4"), ms(110))) // a null key: at once
	// 130: past both windows (106+15, 107+15), and past the earliest time
	// the scan at 121 left (107) + 15.
	require.NoError(t, cIn.Pipe("y", "c3", ms(130)))

	left, err := topologytest.Output(d, "left", serde.String(), serde.String()).ReadRecords()
	require.NoError(t, err)
	var got []string
	for _, r := range left {
		got = append(got, r.Key+":"+r.Value+"@"+itoa(r.Timestamp))
	}
	require.Equal(t, []string{"ad:v1+c1@105", ":v4+none@110", "ad2:v2+none@106"}, got)
	outer, err := topologytest.Output(d, "outer", serde.String(), serde.String()).ReadRecords()
	require.NoError(t, err)
	got = got[:0]
	for _, r := range outer {
		got = append(got, r.Key+":"+r.Value+"@"+itoa(r.Timestamp))
	}
	require.Equal(t, []string{"ad:v1+c1@105", ":v4+none@110", "ad2:v2+none@106", "ad3:none+c2@107"}, got)
}

func itoa(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

// TestOuterJoinStreamsRestoresWaitingRecords: the records waiting for their
// window to close and the join's stream time are logged; a task rebuilt
// from the changelogs emits what the first would have.
func TestOuterJoinStreamsRestoresWaitingRecords(t *testing.T) {
	topo := outerJoinTopology(t)
	first, err := topologytest.New(topo, topologytest.Config{})
	require.NoError(t, err)
	defer first.Close()
	vIn := topologytest.Input(first, "views", serde.String(), serde.String())
	cIn := topologytest.Input(first, "clicks", serde.String(), serde.String())
	require.NoError(t, vIn.Pipe("a", "v1", ms(1000))) // waits
	require.NoError(t, vIn.Pipe("b", "v2", ms(1004))) // waits, joins c2 later
	require.NoError(t, cIn.Pipe("z", "c1", ms(1010))) // stream time 1010, waits (outer)
	require.Empty(t, first.Topic("left"))

	second, err := topologytest.New(topo, topologytest.Config{})
	require.NoError(t, err)
	defer second.Close()
	restore(t, first, second)
	vIn = topologytest.Input(second, "views", serde.String(), serde.String())
	cIn = topologytest.Input(second, "clicks", serde.String(), serde.String())
	require.NoError(t, cIn.Pipe("b", "c2", ms(1008))) // joins v2, below stream time: no emission
	require.NoError(t, vIn.Pipe("c", "v3", ms(990)))  // its window (1000) is behind stream time: at once
	require.NoError(t, vIn.Pipe("x", "v4", ms(1016))) // closes v1 (1000+15 < 1016)
	require.Equal(t, []pair{
		{Key: "b", Value: "v2+c2"}, {Key: "c", Value: "v3+none"}, {Key: "a", Value: "v1+none"},
	}, readPairs(t, second, "left"))
}

// restore writes the changelog records from's logged stores emitted into
// the same stores of to, as an engine restores a task.
func restore(t *testing.T, from, to *topologytest.Driver) {
	t.Helper()
	for _, topic := range from.Topics() {
		store, ok := strings.CutSuffix(strings.TrimPrefix(topic, "weir-test-"), "-changelog")
		if !ok {
			continue
		}
		s, err := to.Store(store)
		require.NoError(t, err)
		for _, o := range from.Topic(topic) {
			require.Equal(t, processor.OutputChangelog, o.Kind)
			switch s := s.(type) {
			case statestore.KeyValueStore:
				require.NoError(t, s.Put(o.Key, o.Value))
			case statestore.WindowStore:
				k, start, err := statestore.DecodeWindowKey(o.Key)
				require.NoError(t, err)
				require.NoError(t, s.Put(k, start, o.Value))
			default:
				t.Fatalf("store %q is a %T", store, s)
			}
		}
	}
}

func TestOuterJoinStreamsDescribeAndValidate(t *testing.T) {
	desc := outerJoinTopology(t).Describe()
	require.Contains(t, desc, "-left-shared-join-store")
	require.Contains(t, desc, "-outer-shared-join-store")

	b := topology.NewBuilder()
	l := topology.NewStream(b, "l", serde.String(), serde.String())
	r := topology.NewStream(b, "r", serde.String(), serde.String())
	topology.OuterJoinStreams(l, r, func(_, a, c string, _, _ bool) string { return a + c }, topology.JoinTimeDifference(-time.Millisecond)).To("out")
	topology.LeftJoinStreams(l, topology.NewStream(b, "r", serde.String(), serde.String()), func(_, a, c string, _ bool) string { return a + c }, topology.JoinTimeDifference(time.Millisecond)).To("out2")
	_, err := b.Build()
	require.ErrorIs(t, err, topology.ErrInvalidTopology)
	require.ErrorContains(t, err, "OuterJoinStreams: invalid join windows")
	require.ErrorContains(t, err, `topic r is already read`)
}
