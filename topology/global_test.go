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

func byFirstChar(_, v string) (string, bool) {
	if v == "" {
		return "", false
	}
	return v[:1], true
}

func TestGlobalJoin(t *testing.T) {
	b := topology.NewBuilder()
	users := topology.NewGlobalTable(b, "users", serde.String(), serde.String(), topology.Materialized("users"))
	orders := topology.NewStream(b, "orders", serde.String(), serde.String())
	// Re-keyed, yet joined without a repartition topic.
	rekeyed := topology.SelectKey(orders, func(k, _ string) string { return "o-" + k })
	topology.JoinGlobal(rekeyed, users, byFirstChar, func(_, order, name string) string { return name + ":" + order }).To("joined")
	topology.LeftJoinGlobal(orders, users, byFirstChar, func(_, order, name string, found bool) string {
		if !found {
			name = "?"
		}
		return name + ":" + order
	}).To("left")
	d := newDriver(t, b)
	require.Empty(t, d.Topics())

	usersIn := topologytest.Input(d, "users", serde.String(), serde.String())
	ordersIn := topologytest.Input(d, "orders", serde.String(), serde.String())
	require.NoError(t, ordersIn.Pipe("1", "a-book", ms(1)))
	require.NoError(t, usersIn.Pipe("a", "Ann", ms(2)))
	require.NoError(t, ordersIn.Pipe("2", "a-pen", ms(3)))
	require.NoError(t, ordersIn.Pipe("3", "", ms(4))) // no mapped key
	require.NoError(t, usersIn.PipeTombstone("a", ms(5)))
	require.NoError(t, ordersIn.Pipe("4", "a-ink", ms(6)))

	require.Equal(t, []pair{{Key: "o-2", Value: "Ann:a-pen"}}, readPairs(t, d, "joined"))
	require.Equal(t, []pair{{Key: "1", Value: "?:a-book"}, {Key: "2", Value: "Ann:a-pen"},
		{Key: "3", Value: "?:"}, {Key: "4", Value: "?:a-ink"}}, readPairs(t, d, "left"))
	require.Equal(t, int64(1), d.Counters()[processor.MetricDroppedNull]) // the inner join's unmapped record

	s, err := d.Store("users")
	require.NoError(t, err)
	kv := s.(interface {
		Get([]byte) ([]byte, bool, error)
	})
	_, ok, err := kv.Get([]byte("a"))
	require.NoError(t, err)
	require.False(t, ok)
}

func TestGlobalTableDescribe(t *testing.T) {
	b := topology.NewBuilder()
	right := topology.NewGlobalTable(b, "right", serde.String(), serde.String())
	left := topology.NewStream(b, "left", serde.String(), serde.String())
	topology.JoinGlobal(left, right, byFirstChar, func(_, v, vg string) string { return v + vg }).To("out")
	topo, err := b.Build()
	require.NoError(t, err)
	require.Equal(t, []string{"left"}, topo.SourceTopics())
	require.Equal(t, []string{"right"}, topo.GlobalTopics())
	// Kafka Streams 4.4 describes the same program so (weir indents every
	// sub-topology alike).
	require.Equal(t, `Topologies:
   Sub-topology: 0 for global store (will not generate tasks)
    Source: KSTREAM-SOURCE-0000000001 (topics: [right])
      --> KTABLE-SOURCE-0000000002
    Processor: KTABLE-SOURCE-0000000002 (stores: [right-STATE-STORE-0000000000])
      --> none
      <-- KSTREAM-SOURCE-0000000001
  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000003 (topics: [left])
      --> KSTREAM-LEFTJOIN-0000000004
    Processor: KSTREAM-LEFTJOIN-0000000004 (stores: [])
      --> KSTREAM-SINK-0000000005
      <-- KSTREAM-SOURCE-0000000003
    Sink: KSTREAM-SINK-0000000005 (topic: out)
      <-- KSTREAM-LEFTJOIN-0000000004

`, topo.Describe())
	require.Len(t, topo.Graph().Subtopologies, 1)
}

// A named global table declared after a stream: Kafka Streams numbers it
// after the stream's sub-topology and suffixes its source's name.
func TestGlobalTableDescribeNamed(t *testing.T) {
	b := topology.NewBuilder()
	left := topology.NewStream(b, "left", serde.String(), serde.String())
	right := topology.NewGlobalTable(b, "right", serde.String(), serde.String(), topology.Named("gt"))
	topology.LeftJoinGlobal(left, right, byFirstChar, func(_, v, vg string, _ bool) string { return v + vg }).To("out")
	topo, err := b.Build()
	require.NoError(t, err)
	require.Equal(t, `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [left])
      --> KSTREAM-LEFTJOIN-0000000004
    Processor: KSTREAM-LEFTJOIN-0000000004 (stores: [])
      --> KSTREAM-SINK-0000000005
      <-- KSTREAM-SOURCE-0000000000
    Sink: KSTREAM-SINK-0000000005 (topic: out)
      <-- KSTREAM-LEFTJOIN-0000000004

  Sub-topology: 1 for global store (will not generate tasks)
    Source: gt-source (topics: [right])
      --> gt
    Processor: gt (stores: [right-STATE-STORE-0000000001])
      --> none
      <-- gt-source
`, topo.Describe())
}

func TestGlobalTableMistakes(t *testing.T) {
	b := topology.NewBuilder()
	topology.NewStream(b, "t", serde.String(), serde.String())
	topology.NewGlobalTable(b, "t", serde.String(), serde.String())
	topology.NewGlobalTable(b, "u", serde.String(), serde.String(), topology.Materialized("s"))
	topology.NewGlobalTable(b, "v", serde.String(), serde.String(), topology.Materialized("s"))
	topology.NewGlobalTable[string, string](b, "w", nil, serde.String())
	topology.NewGlobalTable(b, "x", serde.String(), serde.String(), topology.Versioned(time.Minute))
	_, err := b.Build()
	require.ErrorIs(t, err, topology.ErrInvalidTopology)
	require.ErrorContains(t, err, "topic t is already read")
	require.ErrorContains(t, err, `store "s" declared twice`)
	require.ErrorContains(t, err, `NewGlobalTable("w"): nil serde`)
	require.ErrorContains(t, err, `NewGlobalTable("x"): a global table cannot be versioned`)
}
