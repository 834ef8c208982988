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

func TestWordCountDescribe(t *testing.T) {
	want := `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [text])
      --> KSTREAM-FLATMAPVALUES-0000000001
    Processor: KSTREAM-FLATMAPVALUES-0000000001 (stores: [])
      --> KSTREAM-KEY-SELECT-0000000002
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-KEY-SELECT-0000000002 (stores: [])
      --> by-word-repartition-sink
      <-- KSTREAM-FLATMAPVALUES-0000000001
    Sink: by-word-repartition-sink (topic: <app>-by-word-repartition)
      <-- KSTREAM-KEY-SELECT-0000000002

   Sub-topology: 1
    Source: by-word-repartition-source (topics: [<app>-by-word-repartition])
      --> KSTREAM-COUNT-0000000005
    Processor: KSTREAM-COUNT-0000000005 (stores: [counts])
      --> KTABLE-TOSTREAM-0000000006
      <-- by-word-repartition-source
    Processor: KTABLE-TOSTREAM-0000000006 (stores: [])
      --> KSTREAM-SINK-0000000007
      <-- KSTREAM-COUNT-0000000005
    Sink: KSTREAM-SINK-0000000007 (topic: word-counts)
      <-- KTABLE-TOSTREAM-0000000006

`
	require.Equal(t, want, wordCount(t).Describe())
}
