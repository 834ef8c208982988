package topology_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore"
	"github.com/weirstream/weir/topology"
	"github.com/weirstream/weir/topologytest"
)

// region maps a user's row "region:amount" to its region; a row without a
// region belongs to no group.
func region(_ string, row string) (string, string, bool) {
	for i := 0; i < len(row); i++ {
		if row[i] == ':' {
			return row[:i], row, i > 0
		}
	}
	return "", "", false
}

type tsRecord struct {
	Key       string
	Value     int64
	Tombstone bool
	TS        int64
}

func readUpdates(t *testing.T, d *topologytest.Driver, topic string) []tsRecord {
	t.Helper()
	recs, err := topologytest.Output(d, topic, serde.String(), serde.Int64()).ReadRecords()
	require.NoError(t, err)
	var out []tsRecord
	for _, r := range recs {
		out = append(out, tsRecord{r.Key, r.Value, r.Tombstone, r.Timestamp.UnixMilli()})
	}
	return out
}

func TestGroupTableCountFollowsMovesAndDeletes(t *testing.T) {
	b := topology.NewBuilder()
	users := topology.NewTable(b, "users", serde.String(), serde.String())
	topology.GroupTable(users, region).Count(topology.Materialized("per-region")).ToStream().To("counts")
	d := newDriver(t, b)
	in := topologytest.Input(d, "users", serde.String(), serde.String())

	require.NoError(t, in.Pipe("alice", "eu:1", ms(10)))
	require.NoError(t, in.Pipe("bob", "eu:2", ms(20)))
	require.NoError(t, in.Pipe("alice", "us:3", ms(15))) // moves, out of order
	require.NoError(t, in.PipeTombstone("bob", ms(30)))
	require.NoError(t, in.Pipe("alice", "us:4", ms(40))) // stays: one update of us
	require.NoError(t, in.Pipe("carol", "nowhere", ms(50)))
	require.NoError(t, in.PipeTombstone("dave", ms(60))) // never there: nothing
	require.Equal(t, []tsRecord{
		{"eu", 1, false, 10},
		{"eu", 2, false, 20},
		{"eu", 1, false, 20}, // alice leaves eu: the group's latest time stays
		{"us", 1, false, 15},
		{"eu", 0, false, 30}, // an emptied group keeps its count
		{"us", 1, false, 40},
	}, readUpdates(t, d, "counts"))
	require.Equal(t, int64(1), d.Counters()[processor.MetricDroppedNull])

	store, err := topologytest.KeyValueStore(d, "per-region", serde.String(), serde.Int64())
	require.NoError(t, err)
	n, _, err := store.Get("us")
	require.NoError(t, err)
	require.Equal(t, int64(1), n)

	// The repartition topic carries Kafka Streams' change format: the old
	// group gets the old value (flag 0), the new group the new one (flag
	// 1), an update within one group both (flag 2).
	rep := d.Topic("weir-test-per-region-repartition")
	require.Len(t, rep, 6)
	require.Equal(t, "eu:1\x01", string(rep[0].Value))
	require.Equal(t, "eu:1\x00", string(rep[2].Value))
	require.Equal(t, "us:3\x01", string(rep[3].Value))
	require.Equal(t, "\x08us:4us:3\x02", string(rep[5].Value))
}

func TestGroupTableReduceAndAggregate(t *testing.T) {
	b := topology.NewBuilder()
	amounts := topology.NewTable(b, "amounts", serde.String(), serde.Int64())
	byParity := func(_ string, n int64) (string, int64, bool) {
		if n%2 == 0 {
			return "even", n, true
		}
		return "odd", n, true
	}
	g := topology.GroupTable(amounts, byParity, topology.Named("parity"))
	g.Reduce(func(a, v int64) int64 { return a + v }, func(a, v int64) int64 { return a - v },
		topology.Materialized("sums")).ToStream().To("sums")
	topology.AggregateTable(g, func() int64 { return 100 },
		func(_ string, v, agg int64) int64 { return agg + 10*v },
		func(_ string, v, agg int64) int64 { return agg - 10*v },
		serde.Int64(), topology.Materialized("scaled")).ToStream().To("scaled")
	d := newDriver(t, b)
	in := topologytest.Input(d, "amounts", serde.String(), serde.Int64())
	require.NoError(t, in.Pipe("a", 2, ms(1)))
	require.NoError(t, in.Pipe("b", 4, ms(2)))
	require.NoError(t, in.Pipe("a", 3, ms(3)))
	require.NoError(t, in.PipeTombstone("b", ms(4)))
	require.Equal(t, []tsRecord{
		{"even", 2, false, 1}, {"even", 6, false, 2}, {"even", 4, false, 3}, {"odd", 3, false, 3}, {"even", 0, false, 4},
	}, readUpdates(t, d, "sums"))
	require.Equal(t, []tsRecord{
		{"even", 120, false, 1}, {"even", 160, false, 2}, {"even", 140, false, 3}, {"odd", 130, false, 3}, {"even", 100, false, 4},
	}, readUpdates(t, d, "scaled"))
	// A named GroupedTable shares one repartition topic.
	require.Len(t, d.Topic("weir-test-parity-repartition"), 5)
}

func TestGroupTableChangedSelectorSubtractsFromNoAggregate(t *testing.T) {
	// A selector that changes between updates (a redeployed application)
	// may subtract from a group without an aggregate: Kafka Streams
	// stores and forwards a delete.
	b := topology.NewBuilder()
	users := topology.NewTable(b, "users", serde.String(), serde.String())
	calls := 0
	fickle := func(_ string, v string) (string, string, bool) {
		calls++
		if calls == 1 {
			return "first", v, true
		}
		return "second", v, true
	}
	topology.GroupTable(users, fickle).Count(topology.Materialized("c")).ToStream().To("counts")
	d := newDriver(t, b)
	in := topologytest.Input(d, "users", serde.String(), serde.String())
	require.NoError(t, in.Pipe("x", "v", ms(5)))
	calls = 1
	require.NoError(t, in.PipeTombstone("x", ms(7))) // old value maps to "second" now
	require.Equal(t, []tsRecord{{"first", 1, false, 5}, {"second", 0, true, 7}}, readUpdates(t, d, "counts"))
}

func TestGroupTableBuildErrors(t *testing.T) {
	type point struct{ X int }
	b := topology.NewBuilder()
	tbl := topology.NewTable(b, "in", serde.String(), serde.String())
	g := topology.GroupTable(tbl, func(k, v string) (point, string, bool) { return point{len(v)}, v, true },
		topology.Partitions(-1))
	g.Count()
	_, err := b.Build()
	require.ErrorIs(t, err, topology.ErrInvalidTopology)
	require.ErrorContains(t, err, "negative partition count")
	require.ErrorContains(t, err, "no key serde for topology_test.point")
}

func TestGroupTableDescribe(t *testing.T) {
	b := topology.NewBuilder()
	users := topology.NewTable(b, "users", serde.String(), serde.String(), topology.Materialized("users"))
	topology.GroupTable(users, region).Count(topology.Materialized("per-region")).ToStream().To("counts")
	topo, err := b.Build()
	require.NoError(t, err)
	require.Equal(t, `Topologies:
   Sub-topology: 0
    Source: KTABLE-SOURCE-0000000000 (topics: [users])
      --> KTABLE-SOURCE-MATERIALIZE-0000000001
    Processor: KTABLE-SOURCE-MATERIALIZE-0000000001 (stores: [users])
      --> KTABLE-SELECT-0000000002
      <-- KTABLE-SOURCE-0000000000
    Processor: KTABLE-SELECT-0000000002 (stores: [])
      --> KSTREAM-SINK-0000000003
      <-- KTABLE-SOURCE-MATERIALIZE-0000000001
    Sink: KSTREAM-SINK-0000000003 (topic: per-region-repartition)
      <-- KTABLE-SELECT-0000000002

  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000004 (topics: [per-region-repartition])
      --> KTABLE-AGGREGATE-0000000005
    Processor: KTABLE-AGGREGATE-0000000005 (stores: [per-region])
      --> KTABLE-TOSTREAM-0000000006
      <-- KSTREAM-SOURCE-0000000004
    Processor: KTABLE-TOSTREAM-0000000006 (stores: [])
      --> KSTREAM-SINK-0000000007
      <-- KTABLE-AGGREGATE-0000000005
    Sink: KSTREAM-SINK-0000000007 (topic: counts)
      <-- KTABLE-TOSTREAM-0000000006

`, topo.Describe())

	// The result is queryable like the other aggregations.
	codec, ok := topo.Graph().StoreCodecs["per-region"]
	require.True(t, ok)
	kb, err := codec.ParseKey("eu")
	require.NoError(t, err)
	require.Equal(t, []byte("eu"), kb)
	v, err := codec.DecodeValue([]byte{0, 0, 0, 0, 0, 0, 0, 3})
	require.NoError(t, err)
	require.Equal(t, int64(3), v)
}

// TestGroupTableRestoredFromChangelogs runs the two sub-topologies of a
// re-grouped count as tasks, replays every changelog they wrote into fresh
// stores, and continues on them: the entry's previous value, kept by the
// select node, and the group's count both come back, so a move after the
// restore still subtracts from the old group.
func TestGroupTableRestoredFromChangelogs(t *testing.T) {
	b := topology.NewBuilder()
	users := topology.NewTable(b, "users", serde.String(), serde.String(), topology.Materialized("users"))
	topology.GroupTable(users, region).Count(topology.Materialized("per-region")).ToStream().To("counts")
	topo, err := b.Build()
	require.NoError(t, err)
	g := topo.Graph()
	require.Len(t, g.Subtopologies, 2)

	// run feeds records through both tasks (the repartition records in
	// order) and returns the changelog records and the counts written.
	run := func(stores statestore.Factory, inputs []processor.RawRecord) (changes []processor.Output, counts []string) {
		var tasks [2]*processor.Task
		var queue []processor.Output
		for i := range tasks {
			task, err := processor.NewTask(g, processor.TaskConfig{
				ApplicationID: "app", ID: processor.TaskID{Subtopology: i}, Stores: stores,
				Emit: func(o processor.Output) error {
					switch o.Kind {
					case processor.OutputChangelog:
						changes = append(changes, o)
					case processor.OutputRepartition:
						queue = append(queue, o)
					default:
						n, err := serde.Int64().Deserialize(o.Topic, o.Value)
						require.NoError(t, err)
						counts = append(counts, fmt.Sprintf("%s=%d@%d", o.Key, n, o.Timestamp.UnixMilli()))
					}
					return nil
				},
			})
			require.NoError(t, err)
			t.Cleanup(func() { _ = task.Close() })
			tasks[i] = task
		}
		for _, in := range inputs {
			require.NoError(t, tasks[0].Process(in))
			for len(queue) > 0 {
				o := queue[0]
				queue = queue[1:]
				require.NoError(t, tasks[1].Process(processor.RawRecord{Topic: o.Topic, Key: o.Key, Value: o.Value, Timestamp: o.Timestamp}))
			}
		}
		return changes, counts
	}
	rec := func(k, v string, ts int64) processor.RawRecord {
		return processor.RawRecord{Topic: "users", Key: []byte(k), Value: []byte(v), Timestamp: ms(ts)}
	}
	changes, counts := run(statestore.NewInMemoryFactory(), []processor.RawRecord{rec("alice", "eu:1", 1), rec("bob", "eu:2", 2)})
	require.Equal(t, []string{"eu=1@1", "eu=2@2"}, counts)

	fresh := statestore.NewInMemoryFactory()
	restored := map[string]bool{}
	for _, st := range g.Subtopologies {
		for _, spec := range st.Stores {
			s, err := fresh.Open(spec, 0)
			require.NoError(t, err)
			for _, c := range changes {
				if c.Topic == processor.ChangelogTopic(spec.Name).Resolve("app") {
					require.NoError(t, processor.Restore(s, c.Key, c.Value))
					restored[spec.Name] = true
				}
			}
		}
	}
	require.True(t, restored["KTABLE-SELECT-0000000002-prior"], "the previous values have a changelog: %v", restored)
	require.True(t, restored["per-region"])

	_, counts = run(fresh, []processor.RawRecord{rec("alice", "us:3", 3)})
	require.Equal(t, []string{"eu=1@3", "us=1@3"}, counts)
}

// A nil function given to an aggregation is a Build error, not a panic of
// the first record that reaches it.
func TestAggregationNilFunctionsAreBuildErrors(t *testing.T) {
	b := topology.NewBuilder()
	tbl := topology.NewTable(b, "in", serde.String(), serde.String())
	var selector func(string, string) (string, string, bool)
	topology.GroupTable(tbl, selector, topology.Named("nil-selector")).Count()
	g := topology.GroupTable(tbl, region)
	g.Reduce(nil, func(a, v string) string { return a }, topology.Named("nil-adder"))
	g.Reduce(func(a, v string) string { return a }, nil, topology.Named("nil-subtractor"))
	topology.AggregateTable(g, nil, func(string, string, int64) int64 { return 0 },
		func(string, string, int64) int64 { return 0 }, serde.Int64(), topology.Named("nil-init"))

	s := topology.NewStream(b, "clicks", serde.String(), serde.String())
	s.GroupByKey().Reduce(nil, topology.Named("nil-stream-reducer"))
	topology.Aggregate(s.GroupByKey(), nil, nil, serde.Int64(), topology.Named("nil-stream-aggregate"))
	w := topology.WindowedBy(s.GroupByKey(), topology.TumblingWindows(time.Second))
	w.Reduce(nil, topology.Named("nil-window-reducer"))
	topology.AggregateWindowed(w, nil, func(string, string, int64) int64 { return 0 }, serde.Int64(), topology.Named("nil-window-init"))
	topology.AggregateWindowed(w, func() int64 { return 0 }, nil, serde.Int64(), topology.Named("nil-window-adder"))
	sw := topology.SessionWindowedBy(s.GroupByKey(), topology.SessionWindowsWithGap(time.Second))
	sw.Reduce(nil, topology.Named("nil-session-reducer"))
	topology.AggregateSessions(sw, nil, func(string, string, int64) int64 { return 0 },
		func(string, int64, int64) int64 { return 0 }, serde.Int64(), topology.Named("nil-session-init"))

	_, err := b.Build()
	require.ErrorIs(t, err, topology.ErrInvalidTopology)
	for _, msg := range []string{
		"GroupTable: nil selector",
		"KTABLE-REDUCE: nil adder", "KTABLE-REDUCE: nil subtractor", "KTABLE-AGGREGATE: nil initializer",
		"KSTREAM-WINDOWED-REDUCE: nil reducer", "KSTREAM-WINDOWED-AGGREGATE: nil initializer", "KSTREAM-WINDOWED-AGGREGATE: nil adder",
		"KSTREAM-SESSION-REDUCE: nil reducer", "KSTREAM-SESSION-AGGREGATE: nil initializer",
		"KSTREAM-REDUCE: nil reducer", "KSTREAM-AGGREGATE: nil initializer", "KSTREAM-AGGREGATE: nil adder",
	} {
		require.ErrorContains(t, err, msg)
	}
}

// countPrior returns the number of entries of a GroupTable's prior store.
func countPrior(t *testing.T, d *topologytest.Driver, store string) int {
	t.Helper()
	s, err := d.Store(store)
	require.NoError(t, err)
	it, err := s.(statestore.KeyValueStore).PrefixScan(nil)
	require.NoError(t, err)
	n := 0
	for it.Next() {
		n++
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	return n
}

// A table of windows re-grouped (counts per user and minute, re-grouped by
// minute) keeps the previous value of an open window only: a closed window
// is never updated again, so its entry in the prior store would stay
// forever. The totals stay right while windows close.
func TestGroupTableOfWindowsForgetsClosedWindows(t *testing.T) {
	b := topology.NewBuilder()
	clicks := topology.NewStream(b, "clicks", serde.String(), serde.String())
	perUser := topology.WindowedBy(clicks.GroupByKey(), topology.TumblingWindows(time.Minute).WithGrace(time.Second)).Count()
	byMinute := topology.GroupTable(perUser, func(w topology.Windowed[string], n int64) (int64, int64, bool) {
		return w.Start.UnixMilli(), n, true
	}, topology.Named("by-minute")).WithKeySerde(serde.Int64()).WithValueSerde(serde.Int64())
	topology.AggregateTable(byMinute, func() int64 { return 0 },
		func(_ int64, n, agg int64) int64 { return agg + n },
		func(_ int64, n, agg int64) int64 { return agg - n }, serde.Int64()).
		ToStream().To("totals")
	d := newDriver(t, b)
	in := topologytest.Input(d, "clicks", serde.String(), serde.String())
	for minute := int64(0); minute < 50; minute++ {
		for _, user := range []string{"a", "b", "c"} {
			require.NoError(t, in.Pipe(user, "x", ms(minute*60_000+1000)))
			require.NoError(t, in.Pipe(user, "x", ms(minute*60_000+2000)))
		}
	}
	recs, err := topologytest.Output(d, "totals", serde.Int64(), serde.Int64()).ReadRecords()
	require.NoError(t, err)
	last := map[int64]int64{}
	for _, r := range recs {
		last[r.Key] = r.Value
	}
	require.Len(t, last, 50)
	for minute, n := range last {
		require.Equal(t, int64(6), n, "minute %d", minute)
	}
	require.LessOrEqual(t, countPrior(t, d, "by-minute-prior"), 2*3)
}
