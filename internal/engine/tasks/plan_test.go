package tasks_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

func joinTopology(t *testing.T, rekey bool) *topology.Topology {
	t.Helper()
	b := topology.NewBuilder()
	orders := topology.NewStream(b, "orders", serde.String(), serde.String())
	users := topology.NewTable(b, "users", serde.String(), serde.String(), topology.Materialized("users"))
	if rekey {
		orders = topology.SelectKey(orders, func(_, v string) string { return v })
	}
	topology.Join(orders, users, func(_, o, u string) string { return o + u }).To("out")
	topo, err := b.Build()
	require.NoError(t, err)
	return topo
}

func TestPlanCoPartitioned(t *testing.T) {
	p, err := tasks.Plan(joinTopology(t, false).Graph(), "app", map[string]int32{"orders": 6, "users": 6})
	require.NoError(t, err)
	require.Equal(t, []int32{6}, p.Partitions)
	require.ElementsMatch(t, []string{"orders", "users"}, p.Sources[0])
	require.Equal(t, []tasks.InternalTopic{{Name: "app-users-changelog", Partitions: 6, Compacted: true}}, p.Internal)
}

func TestPlanRejectsTopicsThatAreNotCoPartitioned(t *testing.T) {
	_, err := tasks.Plan(joinTopology(t, false).Graph(), "app", map[string]int32{"orders": 6, "users": 4})
	require.ErrorIs(t, err, tasks.ErrCoPartitioning)
	require.ErrorContains(t, err, `"orders" (6 partitions) and "users" (4 partitions)`)
}

func TestPlanRepartitionTakesTheWritersCount(t *testing.T) {
	// The re-keyed orders go through a repartition topic with the orders'
	// 3 partitions; the join side then reads it with the 3-partition users.
	p, err := tasks.Plan(joinTopology(t, true).Graph(), "app", map[string]int32{"orders": 3, "users": 3})
	require.NoError(t, err)
	require.Equal(t, []int32{3, 3}, p.Partitions)
	var names []string
	for _, it := range p.Internal {
		names = append(names, it.Name)
		require.Equal(t, int32(3), it.Partitions)
	}
	require.Len(t, names, 2)

	// ... and with 4 user partitions the join cannot be co-partitioned.
	_, err = tasks.Plan(joinTopology(t, true).Graph(), "app", map[string]int32{"orders": 3, "users": 4})
	require.ErrorIs(t, err, tasks.ErrCoPartitioning)
}

func TestPlanNeedsEverySourceCount(t *testing.T) {
	_, err := tasks.Plan(joinTopology(t, false).Graph(), "app", map[string]int32{"orders": 6})
	require.ErrorContains(t, err, `no partition count for source topic "users"`)
}

func fkJoinTopology(t *testing.T) *topology.Topology {
	t.Helper()
	b := topology.NewBuilder()
	orders := topology.NewTable(b, "orders", serde.String(), serde.String(), topology.Materialized("orders"))
	users := topology.NewTable(b, "users", serde.String(), serde.String(), topology.Materialized("users"))
	topology.JoinTablesOnForeignKey(orders, users, func(_, o string) string { return o },
		func(o, u string) string { return o + u }, topology.Named("fk")).ToStream().To("out")
	topo, err := b.Build()
	require.NoError(t, err)
	return topo
}

func TestPlanForeignKeyJoinTopicsTakeTheirReadersCount(t *testing.T) {
	// The tables need not be co-partitioned: the subscription topic is read
	// beside the users (4 partitions), the response topic beside the
	// orders (6), whichever sub-topology writes them.
	p, err := tasks.Plan(fkJoinTopology(t).Graph(), "app", map[string]int32{"orders": 6, "users": 4})
	require.NoError(t, err)
	require.Equal(t, []int32{6, 4}, p.Partitions)
	counts := map[string]int32{}
	for _, it := range p.Internal {
		counts[it.Name] = it.Partitions
	}
	require.Equal(t, int32(4), counts["app-fk-subscription-registration-repartition"])
	require.Equal(t, int32(6), counts["app-fk-subscription-response-repartition"])
	require.Equal(t, int32(4), counts["app-fk-subscription-store-changelog"])
	require.Equal(t, int32(6), counts["app-fk-left-values-changelog"])
}
