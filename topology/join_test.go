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

type pair = processor.KeyValue[string, string]

func newDriver(t *testing.T, b *topology.Builder) *topologytest.Driver {
	t.Helper()
	topo, err := b.Build()
	require.NoError(t, err)
	d, err := topologytest.New(topo, topologytest.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	return d
}

func readPairs(t *testing.T, d *topologytest.Driver, topic string) []pair {
	t.Helper()
	got, err := topologytest.Output(d, topic, serde.String(), serde.String()).ReadKeyValues()
	require.NoError(t, err)
	return got
}

func TestStreamTableJoin(t *testing.T) {
	b := topology.NewBuilder()
	orders := topology.NewStream(b, "orders", serde.String(), serde.String())
	users := topology.NewTable(b, "users", serde.String(), serde.String(), topology.Materialized("users"))
	topology.Join(orders, users, func(user, order, name string) string { return name + " ordered " + order }).To("enriched")
	topology.LeftJoin(orders, users, func(user, order, name string, found bool) string {
		if !found {
			return "unknown user " + user + " ordered " + order
		}
		return name + " ordered " + order
	}).To("enriched-left")
	d := newDriver(t, b)

	usersIn := topologytest.Input(d, "users", serde.String(), serde.String())
	ordersIn := topologytest.Input(d, "orders", serde.String(), serde.String())
	require.NoError(t, ordersIn.Pipe("u1", "book", ms(1))) // no user yet
	require.NoError(t, usersIn.Pipe("u1", "Ann", ms(2)))
	require.NoError(t, ordersIn.Pipe("u1", "pen", ms(3)))
	require.NoError(t, usersIn.Pipe("u1", "Ann B.", ms(4)))
	require.NoError(t, ordersIn.Pipe("u1", "ink", ms(5)))
	require.NoError(t, usersIn.PipeTombstone("u1", ms(6))) // user deleted
	require.NoError(t, ordersIn.Pipe("u1", "cap", ms(7)))

	require.Equal(t, []pair{{Key: "u1", Value: "Ann ordered pen"}, {Key: "u1", Value: "Ann B. ordered ink"}}, readPairs(t, d, "enriched"))
	require.Equal(t, []pair{
		{Key: "u1", Value: "unknown user u1 ordered book"}, {Key: "u1", Value: "Ann ordered pen"},
		{Key: "u1", Value: "Ann B. ordered ink"}, {Key: "u1", Value: "unknown user u1 ordered cap"},
	}, readPairs(t, d, "enriched-left"))
}

func TestTableTableJoin(t *testing.T) {
	b := topology.NewBuilder()
	names := topology.NewTable(b, "names", serde.String(), serde.String(), topology.Materialized("names"))
	cities := topology.NewTable(b, "cities", serde.String(), serde.String(), topology.Materialized("cities"))
	topology.JoinTables(names, cities, func(_ string, n, c string) string { return n + "@" + c }, topology.Materialized("joined")).
		ToStream().To("people")
	d := newDriver(t, b)
	namesIn := topologytest.Input(d, "names", serde.String(), serde.String())
	citiesIn := topologytest.Input(d, "cities", serde.String(), serde.String())
	require.NoError(t, namesIn.Pipe("1", "Ann", ms(1)))
	require.NoError(t, citiesIn.Pipe("1", "Oslo", ms(2)))
	require.NoError(t, namesIn.Pipe("1", "Anna", ms(3)))
	require.NoError(t, citiesIn.PipeTombstone("1", ms(4)))

	out, err := topologytest.Output(d, "people", serde.String(), serde.String()).ReadRecords()
	require.NoError(t, err)
	require.Len(t, out, 3)
	require.Equal(t, "Ann@Oslo", out[0].Value)
	require.Equal(t, "Anna@Oslo", out[1].Value)
	require.True(t, out[2].Tombstone)

	joined, err := topologytest.KeyValueStore(d, "joined", serde.String(), serde.String())
	require.NoError(t, err)
	_, ok, err := joined.Get("1")
	require.NoError(t, err)
	require.False(t, ok, "the delete reached the materialized join")
}

func TestStreamStreamJoin(t *testing.T) {
	b := topology.NewBuilder()
	views := topology.NewStream(b, "views", serde.String(), serde.String())
	clicks := topology.NewStream(b, "clicks", serde.String(), serde.String())
	topology.JoinStreams(views, clicks, func(_ string, v, c string) string { return v + "+" + c },
		topology.JoinTimeDifference(10*time.Millisecond)).To("matched")
	d := newDriver(t, b)
	vIn := topologytest.Input(d, "views", serde.String(), serde.String())
	cIn := topologytest.Input(d, "clicks", serde.String(), serde.String())
	require.NoError(t, vIn.Pipe("ad", "v1", ms(100)))
	require.NoError(t, cIn.Pipe("ad", "c1", ms(105))) // within 10ms of v1
	require.NoError(t, cIn.Pipe("ad", "c2", ms(115))) // 15ms after v1: no match
	require.NoError(t, vIn.Pipe("ad", "v2", ms(112))) // matches c1 (7ms) and c2 (3ms)
	require.NoError(t, vIn.Pipe("other", "v3", ms(113)))
	require.Equal(t, []pair{
		{Key: "ad", Value: "v1+c1"}, {Key: "ad", Value: "v2+c1"}, {Key: "ad", Value: "v2+c2"},
	}, readPairs(t, d, "matched"))
	rec, err := topologytest.Output(d, "matched", serde.String(), serde.String()).ReadRecords()
	require.NoError(t, err)
	require.Empty(t, rec)
	all := d.Topic("matched")
	require.Equal(t, ms(105), all[0].Timestamp, "a join result has the later timestamp")
}

func TestJoinOfRekeyedStreamRepartitions(t *testing.T) {
	b := topology.NewBuilder()
	orders := topology.NewStream(b, "orders", serde.String(), serde.String())
	users := topology.NewTable(b, "users", serde.String(), serde.String(), topology.Materialized("users"))
	byUser := topology.SelectKey(orders, func(_, v string) string { return v })
	topology.Join(byUser, users, func(_, _, name string) string { return name }).To("out")
	topo, err := b.Build()
	require.NoError(t, err)
	require.Len(t, topo.Graph().Subtopologies, 2, "the re-keyed stream goes through a repartition topic")
	d, err := topologytest.New(topo, topologytest.Config{})
	require.NoError(t, err)
	defer d.Close()
	require.NoError(t, topologytest.Input(d, "users", serde.String(), serde.String()).Pipe("u7", "Ann", ms(1)))
	require.NoError(t, topologytest.Input(d, "orders", serde.String(), serde.String()).Pipe("order-1", "u7", ms(2)))
	require.Equal(t, []pair{{Key: "u7", Value: "Ann"}}, readPairs(t, d, "out"))
}

// TestStreamStreamJoinDriversOfOneTopologyAreIndependent: each side's
// retention is measured from the largest timestamp stored on that side, per
// task (in the task's stream-times store); two drivers of one topology must
// not see each other's.
func TestStreamStreamJoinDriversOfOneTopologyAreIndependent(t *testing.T) {
	b := topology.NewBuilder()
	l := topology.NewStream(b, "l", serde.String(), serde.String())
	r := topology.NewStream(b, "r", serde.String(), serde.String())
	topology.JoinStreams(l, r, func(_, a, c string) string { return a + c }, topology.JoinTimeDifference(5*time.Millisecond)).To("out")
	topo, err := b.Build()
	require.NoError(t, err)
	drivers := make([]*topologytest.Driver, 2)
	for i := range drivers {
		drivers[i], err = topologytest.New(topo, topologytest.Config{})
		require.NoError(t, err)
		defer drivers[i].Close()
	}
	pipe := func(d *topologytest.Driver, topic, v string, at int64) {
		require.NoError(t, topologytest.Input(d, topic, serde.String(), serde.String()).Pipe("k", v, ms(at)))
	}
	pipe(drivers[0], "l", "x", 1000) // the first driver's left side is at 1000
	pipe(drivers[1], "l", "a", 10)
	pipe(drivers[1], "r", "b", 12)
	require.Equal(t, []pair{{Key: "k", Value: "ab"}}, readPairs(t, drivers[1], "out"))
}

// TestJoinAndAggregateTimestamps pins Kafka Streams' timestamps (issue 21):
// a table-table join result carries the later of the two sides'
// timestamps, an aggregation's update the largest timestamp of its key.
func TestJoinAndAggregateTimestamps(t *testing.T) {
	b := topology.NewBuilder()
	names := topology.NewTable(b, "names", serde.String(), serde.String(), topology.Materialized("names"))
	cities := topology.NewTable(b, "cities", serde.String(), serde.String(), topology.Materialized("cities"))
	topology.JoinTables(names, cities, func(_ string, n, c string) string { return n + "@" + c }).ToStream().To("people")
	visits := topology.NewStream(b, "visits", serde.String(), serde.String())
	visits.GroupByKey().Count().ToStream().To("visit-counts")
	d := newDriver(t, b)
	namesIn := topologytest.Input(d, "names", serde.String(), serde.String())
	citiesIn := topologytest.Input(d, "cities", serde.String(), serde.String())
	require.NoError(t, namesIn.Pipe("1", "Ann", ms(1005)))
	require.NoError(t, citiesIn.Pipe("1", "Oslo", ms(1002)))  // joins Ann (1005)
	require.NoError(t, namesIn.Pipe("1", "Anna", ms(1001)))   // joins Oslo (1002)
	require.NoError(t, citiesIn.PipeTombstone("1", ms(1000))) // deletes Anna (1001)
	out, err := topologytest.Output(d, "people", serde.String(), serde.String()).ReadRecords()
	require.NoError(t, err)
	var stamps []int64
	for _, r := range out {
		stamps = append(stamps, r.Timestamp.UnixMilli())
	}
	require.Equal(t, []int64{1005, 1002, 1001}, stamps)

	visitsIn := topologytest.Input(d, "visits", serde.String(), serde.String())
	for _, at := range []int64{1008, 1004, 1010} {
		require.NoError(t, visitsIn.Pipe("ann", "v", ms(at)))
	}
	counts, err := topologytest.Output(d, "visit-counts", serde.String(), serde.Int64()).ReadRecords()
	require.NoError(t, err)
	stamps = stamps[:0]
	for _, r := range counts {
		stamps = append(stamps, r.Timestamp.UnixMilli())
	}
	require.Equal(t, []int64{1008, 1008, 1010}, stamps)
}

// A stream record with a null key is joined with no table value by a left
// join (Kafka Streams since 3.7, KIP-962) and dropped by an inner join; a
// null value is dropped by both.
func TestStreamTableJoinNullKey(t *testing.T) {
	b := topology.NewBuilder()
	orders := topology.NewStream(b, "orders", serde.String(), serde.String())
	users := topology.NewTable(b, "users", serde.String(), serde.String(), topology.Materialized("users"))
	topology.Join(orders, users, func(_, order, name string) string { return name + " ordered " + order }).To("inner")
	topology.LeftJoin(orders, users, func(user, order, name string, found bool) string {
		return "user " + user + " ordered " + order + " found " + map[bool]string{true: "yes", false: "no"}[found]
	}).To("left")
	d := newDriver(t, b)

	require.NoError(t, d.PipeRaw("users", nil, []byte("Ann"), ms(1))) // a table drops a null key
	require.NoError(t, d.PipeRaw("orders", nil, []byte("book"), ms(2)))
	require.NoError(t, d.PipeRaw("orders", nil, nil, ms(3)))
	require.NoError(t, d.PipeRaw("orders", []byte("u1"), nil, ms(4)))

	require.Empty(t, d.Topic("inner"))
	left := d.Topic("left")
	require.Len(t, left, 1)
	require.Nil(t, left[0].Key)
	require.Equal(t, "user  ordered book found no", string(left[0].Value))
	require.Equal(t, ms(2), left[0].Timestamp)
	// users' null key; book in the inner join; both nulls in both joins.
	require.Equal(t, int64(6), d.Counters()[processor.MetricDroppedNull])
}
