package tasks_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

// The preflight asks about a global table's topic, which must exist, and
// under DeadLetter creates its dead-letter topic with as many partitions.
func TestCheckTopicsOfAGlobalTable(t *testing.T) {
	b := topology.NewBuilder()
	users := topology.NewGlobalTable(b, "users", serde.String(), serde.String())
	orders := topology.NewStream(b, "orders", serde.String(), serde.String())
	topology.JoinGlobal(orders, users, func(_, u string) (string, bool) { return u, true },
		func(_, o, u string) string { return o + u }).To("out")
	topo, err := b.Build()
	require.NoError(t, err)
	req := tasks.RequirementsOf(topo.Graph(), "app")
	require.Equal(t, []string{"users"}, req.Globals)
	require.Equal(t, []string{"orders"}, req.ExternalSources())
	opts := tasks.PreflightOptions{DeadLetter: true}
	all, _ := tasks.PreflightTopics(req, opts)
	require.Contains(t, all, "users")
	require.Contains(t, all, "users-dlq")

	facts := map[string]kafka.TopicFacts{"orders": {Partitions: 4}, "out": {Partitions: 4}, "orders-dlq": {Partitions: 4}}
	_, _, err = tasks.CheckTopics(req, facts, opts)
	require.ErrorIs(t, err, tasks.ErrMissingTopic)
	require.ErrorContains(t, err, `global table topic "users" does not exist`)

	facts["users"] = kafka.TopicFacts{Partitions: 3} // not co-partitioned with orders: fine
	_, create, err := tasks.CheckTopics(req, facts, opts)
	require.NoError(t, err)
	require.Len(t, create, 1)
	require.Equal(t, "users-dlq", create[0].Name)
	require.Equal(t, int32(3), create[0].Partitions)
}
