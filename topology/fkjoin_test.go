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

// orderCustomer is the foreign key of an order "<customer id>|<item>".
func orderCustomer(_ string, order string) int64 {
	id, _, _ := strings.Cut(order, "|")
	n, _ := strconv.ParseInt(id, 10, 64)
	return n
}

func TestJoinTablesOnForeignKey(t *testing.T) {
	b := topology.NewBuilder()
	orders := topology.NewTable(b, "orders", serde.String(), serde.String())
	customers := topology.NewTable(b, "customers", serde.Int64(), serde.String(), topology.Materialized("customers"))
	topology.JoinTablesOnForeignKey(orders, customers, orderCustomer,
		func(order, name string) string { return name + " ordered " + order }).ToStream().To("inner")
	topology.LeftJoinTablesOnForeignKey(orders, customers, orderCustomer,
		func(order, name string, found bool) string {
			if !found {
				name = "nobody"
			}
			return name + " ordered " + order
		}, topology.Materialized("enriched")).ToStream().To("left")
	d := newDriver(t, b)
	ordersIn := topologytest.Input(d, "orders", serde.String(), serde.String())
	customersIn := topologytest.Input(d, "customers", serde.Int64(), serde.String())

	require.NoError(t, customersIn.Pipe(1, "Ann", ms(10)))
	require.NoError(t, ordersIn.Pipe("o1", "1|pen", ms(5)))   // joins Ann, stamped 10
	require.NoError(t, ordersIn.Pipe("o2", "2|ink", ms(20)))  // no customer 2
	require.NoError(t, customersIn.Pipe(2, "Bob", ms(30)))    // o2 joins now
	require.NoError(t, ordersIn.Pipe("o1", "2|pen", ms(40)))  // o1 moves to Bob
	require.NoError(t, customersIn.Pipe(1, "Ann B.", ms(50))) // reaches nobody
	require.NoError(t, customersIn.PipeTombstone(2, ms(60)))  // deletes both inner results
	require.NoError(t, ordersIn.PipeTombstone("o2", ms(70)))

	out := topologytest.Output(d, "inner", serde.String(), serde.String())
	got, err := out.ReadRecords()
	require.NoError(t, err)
	type rec struct {
		k, v string
		del  bool
		ts   int64
	}
	var inner []rec
	for _, r := range got {
		inner = append(inner, rec{k: r.Key, v: r.Value, del: r.Tombstone, ts: r.Timestamp.UnixMilli()})
	}
	require.Equal(t, []rec{
		{k: "o1", v: "Ann ordered 1|pen", ts: 10},
		{k: "o2", v: "Bob ordered 2|ink", ts: 30},
		{k: "o1", v: "Bob ordered 2|pen", ts: 40},
		{k: "o1", del: true, ts: 60},
		{k: "o2", del: true, ts: 60},
		{k: "o2", del: true, ts: 70},
	}, inner)

	require.Equal(t, []pair{
		{Key: "o1", Value: "Ann ordered 1|pen"},
		{Key: "o2", Value: "nobody ordered 2|ink"},
		{Key: "o2", Value: "Bob ordered 2|ink"},
		{Key: "o1", Value: "Bob ordered 2|pen"},
		{Key: "o1", Value: "nobody ordered 2|pen"},
		{Key: "o2", Value: "nobody ordered 2|ink"},
		{Key: "o2", Value: ""}, // the tombstone
	}, readPairs(t, d, "left"))
	s, err := d.Store("enriched")
	require.NoError(t, err)
	v, ok, err := statestore.NewKV(s.(statestore.KeyValueStore), serde.String(), serde.String()).Get("o1")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "nobody ordered 2|pen", v)
}

// TestForeignKeyJoinDropsStaleResponses delays the internal topics, as a
// real deployment may: a left key changes its foreign key before the answer
// to its first subscription arrives, and that answer, for a value since
// replaced, is dropped.
func TestForeignKeyJoinDropsStaleResponses(t *testing.T) {
	b := topology.NewBuilder()
	left := topology.NewTable(b, "left", serde.String(), serde.String())
	right := topology.NewTable(b, "right", serde.String(), serde.String(), topology.Materialized("right"))
	fk := func(_, v string) string { k, _, _ := strings.Cut(v, ":"); return k }
	topology.JoinTablesOnForeignKey(left, right, fk, func(v, vo string) string { return v + "+" + vo }).ToStream().To("out")
	topo, err := b.Build()
	require.NoError(t, err)

	g := topo.Graph()
	stores := statestore.NewInMemoryFactory()
	var pending, out []processor.Output
	readers := map[string]*processor.Task{}
	var tasks []*processor.Task
	for i := range g.Subtopologies {
		task, err := processor.NewTask(g, processor.TaskConfig{
			ApplicationID: "app", ID: processor.TaskID{Subtopology: i}, Stores: stores,
			Emit: func(o processor.Output) error {
				switch o.Kind {
				case processor.OutputRepartition:
					pending = append(pending, o)
				case processor.OutputSink:
					out = append(out, o)
				}
				return nil
			},
		})
		require.NoError(t, err)
		tasks = append(tasks, task)
		for _, topic := range task.Topics() {
			readers[topic] = task
		}
	}
	deliver := func(topic string, k, v []byte, ts int64) {
		t.Helper()
		require.NoError(t, readers[topic].Process(processor.RawRecord{Topic: topic, Key: k, Value: v, Timestamp: ms(ts)}))
	}
	deliverPending := func() {
		t.Helper()
		batch := pending
		pending = nil
		for _, o := range batch {
			deliver(o.Topic, o.Key, o.Value, o.Timestamp.UnixMilli())
		}
	}

	deliver("right", []byte("x"), []byte("X"), 1)
	deliver("right", []byte("y"), []byte("Y"), 2)
	deliverPending()
	deliver("left", []byte("a"), []byte("x:1"), 3) // subscribes to x
	deliver("left", []byte("a"), []byte("y:1"), 4) // moves to y before x answers
	deliverPending()                               // the three subscriptions
	require.Len(t, pending, 2)                     // x's answer, then y's
	deliverPending()
	require.Len(t, out, 1)
	require.Equal(t, "a", string(out[0].Key))
	require.Equal(t, "y:1+Y", string(out[0].Value))
	require.Equal(t, time.UnixMilli(4), out[0].Timestamp)
	var stale int64
	for _, task := range tasks {
		stale += task.Counters()[processor.MetricDroppedStale]
	}
	require.Equal(t, int64(1), stale)
}

func TestForeignKeyJoinBuildErrors(t *testing.T) {
	b := topology.NewBuilder()
	left := topology.NewTable(b, "left", serde.String(), serde.String())
	right := topology.NewTable(b, "right", serde.String(), serde.String())
	unmaterialized := topology.MapTableValues(right, func(_, v string) string { return v })
	topology.JoinTablesOnForeignKey(left, unmaterialized, func(_, v string) string { return v },
		func(v, vo string) string { return v + vo })
	other := topology.NewBuilder()
	foreign := topology.NewTable(other, "foreign", serde.String(), serde.String())
	topology.LeftJoinTablesOnForeignKey(left, foreign, func(_, v string) string { return v },
		func(v, vo string, _ bool) string { return v + vo })
	topology.JoinTablesOnForeignKey[string, string, string, string, string](left, right, nil, nil)
	_, err := b.Build()
	require.ErrorIs(t, err, topology.ErrInvalidTopology)
	require.ErrorContains(t, err, "JoinTablesOnForeignKey: the other table is not materialized")
	require.ErrorContains(t, err, "LeftJoinTablesOnForeignKey: tables from different builders")
	require.ErrorContains(t, err, "JoinTablesOnForeignKey: nil foreign-key extractor or joiner")
}

func TestForeignKeyJoinDescribe(t *testing.T) {
	b := topology.NewBuilder()
	left := topology.NewTable(b, "left", serde.String(), serde.String(), topology.Materialized("left"))
	right := topology.NewTable(b, "right", serde.String(), serde.String(), topology.Materialized("right"))
	topology.JoinTablesOnForeignKey(left, right, func(_, v string) string { return v },
		func(v, vo string) string { return v + vo }, topology.Named("fk")).ToStream().To("out")
	topo, err := b.Build()
	require.NoError(t, err)
	desc := topo.Describe()
	for _, want := range []string{
		"Source: fk-subscription-registration-source (topics: [fk-subscription-registration-repartition])",
		"Processor: fk-subscription-receive (stores: [fk-subscription-store, right])",
		"Processor: fk-foreign-join-subscription (stores: [fk-subscription-store])",
		"Sink: fk-subscription-response-sink (topic: fk-subscription-response-repartition)",
		"Processor: fk-subscription-response-resolver (stores: [])",
	} {
		require.Contains(t, desc, want)
	}
	require.Len(t, topo.Graph().Subtopologies, 2)
}

// A table joined with itself: each employee with their manager's name.
func TestForeignKeyJoinOfATableWithItself(t *testing.T) {
	b := topology.NewBuilder()
	staff := topology.NewTable(b, "staff", serde.String(), serde.String(), topology.Materialized("staff")) // "<manager>:<name>"
	manager := func(_, v string) string { m, _, _ := strings.Cut(v, ":"); return m }
	name := func(v string) string { _, n, _ := strings.Cut(v, ":"); return n }
	topology.LeftJoinTablesOnForeignKey(staff, staff, manager, func(v, m string, found bool) string {
		if !found {
			return name(v) + " reports to nobody"
		}
		return name(v) + " reports to " + name(m)
	}).ToStream().To("out")
	d := newDriver(t, b)
	in := topologytest.Input(d, "staff", serde.String(), serde.String())
	require.NoError(t, in.Pipe("e1", "e0:Ann", ms(1)))
	require.NoError(t, in.Pipe("e2", "e1:Bob", ms(2)))
	require.NoError(t, in.Pipe("e1", "e0:Ann B.", ms(3)))
	// Each key's results in order; between keys, the order is the
	// driver's (Ann's update answers e2 at once and e1 after a round trip).
	byKey := map[string][]string{}
	for _, kv := range readPairs(t, d, "out") {
		byKey[kv.Key] = append(byKey[kv.Key], kv.Value)
	}
	require.Equal(t, map[string][]string{
		"e1": {"Ann reports to nobody", "Ann B. reports to nobody"},
		"e2": {"Bob reports to Ann", "Bob reports to Ann B."},
	}, byKey)
}
