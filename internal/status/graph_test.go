package status_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/status"
	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

// graphTopology has a repartition (two sub-topologies), a store, and a
// global table joined by a stream.
func graphTopology(t *testing.T) *topology.Topology {
	t.Helper()
	b := topology.NewBuilder()
	lines := topology.NewStream(b, "lines", serde.String(), serde.String())
	words := topology.FlatMapValues(lines, strings.Fields)
	topology.GroupBy(words, func(_, w string) string { return w }, topology.Named("words")).
		Count(topology.Materialized("counts")).
		ToStream().To("counts-out")
	users := topology.NewGlobalTable(b, "users", serde.String(), serde.String())
	clicks := topology.NewStream(b, "clicks", serde.String(), serde.String())
	topology.JoinGlobal(clicks, users, func(k, _ string) (string, bool) { return k, true },
		func(_, click, user string) string { return user + ":" + click }).To("enriched")
	topo, err := b.Build()
	require.NoError(t, err)
	return topo
}

// The page's graph is the topology's: every node of every sub-topology,
// with its kind, topics, stores and edges.
func TestParseDescriptionMatchesTheTopology(t *testing.T) {
	topo := graphTopology(t)
	g, err := status.ParseDescription(topo.Describe())
	require.NoError(t, err)

	parsed := map[string]status.Node{}
	globals := 0
	for _, sub := range g.Subtopologies {
		if sub.Global {
			globals++
		}
		for _, n := range sub.Nodes {
			parsed[n.Name] = n
		}
	}
	require.Equal(t, 1, globals)
	count := 0
	for _, sub := range topo.Graph().Subtopologies {
		for _, n := range sub.Nodes {
			count++
			p, ok := parsed[n.Name]
			require.True(t, ok, "node %s missing from the page's graph", n.Name)
			want := slices.Clone(n.Children)
			got := slices.Clone(p.Next)
			slices.Sort(want)
			slices.Sort(got)
			require.Equal(t, want, got, "edges of %s", n.Name)
			switch n.Kind {
			case processor.KindSource:
				require.Equal(t, "source", p.Kind)
				require.Len(t, p.Topics, len(n.Topics))
			case processor.KindSink:
				require.Equal(t, "sink", p.Kind)
				require.NotEmpty(t, p.Topic)
			default:
				require.Equal(t, "processor", p.Kind)
			}
		}
	}
	require.Equal(t, count+2, len(parsed), "the global table's source and processor are drawn too")
	var stores []string
	for _, n := range parsed {
		stores = append(stores, n.Stores...)
	}
	require.Contains(t, stores, "counts")
}

func TestParseDescriptionRefusesWhatItCannotRead(t *testing.T) {
	_, err := status.ParseDescription("Topologies:\n   Sub-topology: 0\n    Gizmo: x\n")
	require.ErrorContains(t, err, `line 3: cannot read "Gizmo: x"`)
	_, err = status.ParseDescription("Topologies:\n      --> a\n")
	require.Error(t, err)
	g, err := status.ParseDescription("Topologies:\n")
	require.NoError(t, err)
	require.Empty(t, g.Subtopologies)
}
