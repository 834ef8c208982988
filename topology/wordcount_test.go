package topology_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
	"github.com/weirstream/weir/topologytest"
)

func wordCount(t *testing.T) *topology.Topology {
	t.Helper()
	b := topology.NewBuilder()
	lines := topology.NewStream(b, "text", serde.String(), serde.String())
	words := topology.FlatMapValues(lines, func(line string) []string { return strings.Fields(strings.ToLower(line)) })
	counts := topology.GroupBy(words, func(_, w string) string { return w }, topology.Named("by-word")).
		Count(topology.Materialized("counts"))
	counts.ToStream().To("word-counts")
	topo, err := b.Build()
	require.NoError(t, err)
	return topo
}

func ms(n int64) time.Time { return time.UnixMilli(n) }

func TestWordCount(t *testing.T) {
	d, err := topologytest.New(wordCount(t), topologytest.Config{ApplicationID: "wc"})
	require.NoError(t, err)
	defer d.Close()
	in := topologytest.Input(d, "text", serde.String(), serde.String())
	out := topologytest.Output(d, "word-counts", serde.String(), serde.Int64())

	require.NoError(t, in.Pipe("", "the quick brown fox", ms(1)))
	require.NoError(t, in.Pipe("", "The lazy dog", ms(2)))

	got, err := out.ReadKeyValues()
	require.NoError(t, err)
	require.Equal(t, []processor.KeyValue[string, int64]{
		{Key: "the", Value: 1}, {Key: "quick", Value: 1}, {Key: "brown", Value: 1}, {Key: "fox", Value: 1},
		{Key: "the", Value: 2}, {Key: "lazy", Value: 1}, {Key: "dog", Value: 1},
	}, got)
	require.True(t, out.IsEmpty())

	counts, err := topologytest.KeyValueStore(d, "counts", serde.String(), serde.Int64())
	require.NoError(t, err)
	n, ok, err := counts.Get("the")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(2), n)

	// The grouping went through a repartition topic and the store has a
	// changelog, both named after the application.
	require.Len(t, d.Topic("wc-by-word-repartition"), 7)
	changes := d.Topic("wc-counts-changelog")
	require.Len(t, changes, 7)
	require.Equal(t, "dog", string(changes[6].Key))
}

// kafkaStreamsWordCount is what Kafka Streams 4.4 prints for
// topology.describe() of the same word count: stream("text"),
// flatMapValues, groupBy(..., Grouped.with("by-word", ...)),
// count(Materialized.as("counts")), toStream(), to("word-counts").
const kafkaStreamsWordCount = `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [text])
      --> KSTREAM-FLATMAPVALUES-0000000001
    Processor: KSTREAM-FLATMAPVALUES-0000000001 (stores: [])
      --> by-word
      <-- KSTREAM-SOURCE-0000000000
    Processor: by-word (stores: [])
      --> by-word-repartition-filter
      <-- KSTREAM-FLATMAPVALUES-0000000001
    Processor: by-word-repartition-filter (stores: [])
      --> by-word-repartition-sink
      <-- by-word
    Sink: by-word-repartition-sink (topic: by-word-repartition)
      <-- by-word-repartition-filter

  Sub-topology: 1
    Source: by-word-repartition-source (topics: [by-word-repartition])
      --> KSTREAM-AGGREGATE-0000000003
    Processor: KSTREAM-AGGREGATE-0000000003 (stores: [counts])
      --> KTABLE-TOSTREAM-0000000007
      <-- by-word-repartition-source
    Processor: KTABLE-TOSTREAM-0000000007 (stores: [])
      --> KSTREAM-SINK-0000000008
      <-- KSTREAM-AGGREGATE-0000000003
    Sink: KSTREAM-SINK-0000000008 (topic: word-counts)
      <-- KTABLE-TOSTREAM-0000000007

`

// TestWordCountDescribe compares weir's Describe with Kafka Streams' text
// for word count. The layout, the order of nodes and edges, the topics and
// stores are the same; the remaining differences are in node names, each
// listed here: Kafka Streams names the key selector after the grouping,
// passes records through a "-repartition-filter" node, calls a count
// KSTREAM-AGGREGATE and numbers nodes differently.
func TestWordCountDescribe(t *testing.T) {
	weirNames := strings.NewReplacer(
		`    Processor: by-word (stores: [])
      --> by-word-repartition-filter
      <-- KSTREAM-FLATMAPVALUES-0000000001
    Processor: by-word-repartition-filter (stores: [])
      --> by-word-repartition-sink
      <-- by-word
`, `    Processor: KSTREAM-KEY-SELECT-0000000002 (stores: [])
      --> by-word-repartition-sink
      <-- KSTREAM-FLATMAPVALUES-0000000001
`,
		"--> by-word\n", "--> KSTREAM-KEY-SELECT-0000000002\n",
		"<-- by-word-repartition-filter", "<-- KSTREAM-KEY-SELECT-0000000002",
		"KSTREAM-AGGREGATE-0000000003", "KSTREAM-COUNT-0000000005",
		"KTABLE-TOSTREAM-0000000007", "KTABLE-TOSTREAM-0000000006",
		"KSTREAM-SINK-0000000008", "KSTREAM-SINK-0000000007",
	)
	require.Equal(t, weirNames.Replace(kafkaStreamsWordCount), wordCount(t).Describe())
}

// TestDescribeOrdersLikeKafkaStreams: a source with two branches. Kafka
// Streams lists nodes by the size of the graph below them, then by name,
// not in the order they were added; this is its text for
// stream("x"); filter → to("o1"); mapValues → filter → to("o2").
func TestDescribeOrdersLikeKafkaStreams(t *testing.T) {
	want := `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [x])
      --> KSTREAM-MAPVALUES-0000000003, KSTREAM-FILTER-0000000001
    Processor: KSTREAM-MAPVALUES-0000000003 (stores: [])
      --> KSTREAM-FILTER-0000000004
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-FILTER-0000000001 (stores: [])
      --> KSTREAM-SINK-0000000002
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-FILTER-0000000004 (stores: [])
      --> KSTREAM-SINK-0000000005
      <-- KSTREAM-MAPVALUES-0000000003
    Sink: KSTREAM-SINK-0000000002 (topic: o1)
      <-- KSTREAM-FILTER-0000000001
    Sink: KSTREAM-SINK-0000000005 (topic: o2)
      <-- KSTREAM-FILTER-0000000004

`
	b := topology.NewBuilder()
	x := topology.NewStream(b, "x", serde.String(), serde.String())
	pass := func(_, _ string) bool { return true }
	x.Filter(pass).To("o1")
	topology.MapValues(x, strings.ToUpper).Filter(pass).To("o2")
	topo, err := b.Build()
	require.NoError(t, err)
	require.Equal(t, want, topo.Describe())
}
