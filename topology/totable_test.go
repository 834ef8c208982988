package topology_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
	"github.com/weirstream/weir/topologytest"
)

func TestToTable(t *testing.T) {
	b := topology.NewBuilder()
	users := topology.NewStream(b, "users", serde.String(), serde.String()).ToTable(topology.Materialized("users"))
	orders := topology.NewStream(b, "orders", serde.String(), serde.String())
	topology.Join(orders, users, func(_, order, name string) string { return name + " ordered " + order }).To("enriched")
	d := newDriver(t, b)
	usersIn := topologytest.Input(d, "users", serde.String(), serde.String())
	ordersIn := topologytest.Input(d, "orders", serde.String(), serde.String())
	require.NoError(t, usersIn.Pipe("u1", "Ann", ms(1)))
	require.NoError(t, d.PipeRaw("users", nil, []byte("Bob"), ms(2))) // dropped and counted
	require.NoError(t, ordersIn.Pipe("u1", "pen", ms(3)))
	require.NoError(t, usersIn.PipeTombstone("u1", ms(4)))
	require.NoError(t, ordersIn.Pipe("u1", "ink", ms(5)))

	require.Equal(t, []pair{{Key: "u1", Value: "Ann ordered pen"}}, readPairs(t, d, "enriched"))
	require.Equal(t, int64(1), d.Counters()[processor.MetricDroppedNull])
	kv, err := topologytest.KeyValueStore(d, "users", serde.String(), serde.String())
	require.NoError(t, err)
	_, ok, err := kv.Get("u1")
	require.NoError(t, err)
	require.False(t, ok, "the tombstone deleted the key")
}

func TestToTableRepartitionsARekeyedStream(t *testing.T) {
	b := topology.NewBuilder()
	in := topology.NewStream(b, "in", serde.String(), serde.String())
	topology.SelectKey(in, func(_, v string) string { return v[:1] }).ToTable(topology.Named("by-initial")).ToStream().To("out")
	topo, err := b.Build()
	require.NoError(t, err)
	desc := topo.Describe()
	require.Contains(t, desc, "Sink: by-initial-repartition-sink (topic: by-initial-repartition)")
	require.Contains(t, desc, "Processor: by-initial (stores: [])")
	require.Equal(t, 2, strings.Count(desc, "Sub-topology:"))
}

func TestToTableNamesLikeKafkaStreams(t *testing.T) {
	b := topology.NewBuilder()
	in := topology.NewStream(b, "in", serde.String(), serde.String())
	in.ToTable().ToStream().To("out")
	topo, err := b.Build()
	require.NoError(t, err)
	// Kafka Streams: KSTREAM-SOURCE-0000000000, KSTREAM-TOTABLE-0000000001,
	// its store KSTREAM-TOTABLE-STATE-STORE-0000000002 (not materialized),
	// KTABLE-TOSTREAM-0000000003, KSTREAM-SINK-0000000004.
	desc := topo.Describe()
	for _, node := range []string{"KSTREAM-TOTABLE-0000000001", "KTABLE-TOSTREAM-0000000003", "KSTREAM-SINK-0000000004"} {
		require.Contains(t, desc, node)
	}
}
