package topology_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
	"github.com/weirstream/weir/topologytest"
)

// orNone prints a value a joiner did not get.
func orNone(v string, found bool) string {
	if !found {
		return "-"
	}
	return v
}

func TestLeftAndOuterJoinTables(t *testing.T) {
	b := topology.NewBuilder()
	names := topology.NewTable(b, "names", serde.String(), serde.String(), topology.Materialized("names"))
	cities := topology.NewTable(b, "cities", serde.String(), serde.String(), topology.Materialized("cities"))
	topology.LeftJoinTables(names, cities, func(_ string, n, c string, found bool) string {
		return n + "@" + orNone(c, found)
	}, topology.Materialized("left")).ToStream().To("left")
	topology.OuterJoinTables(names, cities, func(_ string, n string, found1 bool, c string, found2 bool) string {
		return orNone(n, found1) + "@" + orNone(c, found2)
	}, topology.Materialized("outer")).ToStream().To("outer")
	d := newDriver(t, b)
	namesIn := topologytest.Input(d, "names", serde.String(), serde.String())
	citiesIn := topologytest.Input(d, "cities", serde.String(), serde.String())
	require.NoError(t, citiesIn.Pipe("1", "Oslo", ms(1)))  // left: no name, nothing
	require.NoError(t, namesIn.Pipe("1", "Ann", ms(2)))    // both
	require.NoError(t, citiesIn.PipeTombstone("1", ms(3))) // recomputed with no city
	require.NoError(t, namesIn.PipeTombstone("1", ms(4)))  // deleted
	require.NoError(t, namesIn.PipeTombstone("1", ms(5)))  // no result: nothing
	require.NoError(t, citiesIn.PipeTombstone("2", ms(6))) // never there: nothing

	read := func(topic string) []string {
		out, err := topologytest.Output(d, topic, serde.String(), serde.String()).ReadRecords()
		require.NoError(t, err)
		var vals []string
		for _, r := range out {
			v := r.Value
			if r.Tombstone {
				v = "<deleted>"
			}
			vals = append(vals, v)
		}
		return vals
	}
	require.Equal(t, []string{"Ann@Oslo", "Ann@-", "<deleted>"}, read("left"))
	require.Equal(t, []string{"-@Oslo", "Ann@Oslo", "Ann@-", "<deleted>"}, read("outer"))
	for _, store := range []string{"left", "outer"} {
		kv, err := topologytest.KeyValueStore(d, store, serde.String(), serde.String())
		require.NoError(t, err)
		_, ok, err := kv.Get("1")
		require.NoError(t, err)
		require.False(t, ok, "the delete reached the materialized %s join", store)
	}
}

func TestLeftJoinTablesNeedsMaterializedTables(t *testing.T) {
	b := topology.NewBuilder()
	names := topology.NewTable(b, "names", serde.String(), serde.String())
	cities := topology.MapTableValues(topology.NewTable(b, "cities", serde.String(), serde.String()),
		func(_, c string) string { return c })
	topology.LeftJoinTables(names, cities, func(_ string, n, c string, _ bool) string { return n + c }).ToStream().To("out")
	_, err := b.Build()
	require.ErrorIs(t, err, topology.ErrInvalidTopology)
	require.ErrorContains(t, err, "LeftJoinTables: both tables must be materialized")
}
