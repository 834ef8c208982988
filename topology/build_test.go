package topology_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore"
	"github.com/weirstream/weir/topology"
)

type point struct{ X, Y int }

func TestBuildReportsEveryMistake(t *testing.T) {
	cases := []struct {
		name  string
		build func(b *topology.Builder)
		want  []string
	}{
		{
			name:  "no source",
			build: func(b *topology.Builder) {},
			want:  []string{"no source"},
		},
		{
			name: "missing serde",
			build: func(b *topology.Builder) {
				s := topology.NewStream(b, "in", serde.String(), serde.String())
				topology.MapValues(s, func(v string) point { return point{} }).To("out")
			},
			want: []string{`To("out"): no value serde for topology_test.point`},
		},
		{
			name: "missing serde for a repartition",
			build: func(b *topology.Builder) {
				s := topology.NewStream(b, "in", serde.String(), serde.String())
				topology.GroupBy(s, func(_, v string) point { return point{} }).Count()
			},
			want: []string{"no key serde for topology_test.point"},
		},
		{
			name: "duplicate names",
			build: func(b *topology.Builder) {
				s := topology.NewStream(b, "in", serde.String(), serde.String())
				s.Filter(func(string, string) bool { return true }, topology.Named("f")).To("a")
				s.Filter(func(string, string) bool { return true }, topology.Named("f")).To("b")
			},
			want: []string{`duplicate node name "f"`},
		},
		{
			name: "topic read twice",
			build: func(b *topology.Builder) {
				topology.NewStream(b, "in", serde.String(), serde.String()).To("a")
				topology.NewStream(b, "in", serde.String(), serde.String()).To("b")
			},
			want: []string{"topic in is already read"},
		},
		{
			name: "unknown store",
			build: func(b *topology.Builder) {
				s := topology.NewStream(b, "in", serde.String(), serde.String())
				topology.Process(s, func() processor.Processor[string, string, string, string] { return nil },
					topology.WithStores("nope")).To("out")
			},
			want: []string{`unknown store "nope"`},
		},
		{
			name: "duplicate store",
			build: func(b *topology.Builder) {
				s := topology.NewStream(b, "in", serde.String(), serde.String())
				s.GroupByKey().Count(topology.Materialized("c"))
				s.GroupByKey().Count(topology.Materialized("c"))
			},
			want: []string{`store "c" declared twice`},
		},
		{
			name: "unconnected store",
			build: func(b *topology.Builder) {
				b.AddStore(statestore.Spec{Name: "lonely", Kind: statestore.KindKeyValue})
				topology.NewStream(b, "in", serde.String(), serde.String()).To("out")
			},
			want: []string{`store "lonely" is not connected`},
		},
		{
			name: "bad windows",
			build: func(b *topology.Builder) {
				s := topology.NewStream(b, "in", serde.String(), serde.String())
				topology.WindowedBy(s.GroupByKey(), topology.HoppingWindows(time.Second, 2*time.Second)).Count()
				topology.WindowedBy(s.GroupByKey(), topology.Windows{}).Count()
			},
			want: []string{"window advance 2s must be in [1ms, size 1s]", "windows not set"},
		},
		{
			name: "join with an unmaterialized table",
			build: func(b *topology.Builder) {
				s := topology.NewStream(b, "in", serde.String(), serde.String())
				tbl := topology.NewTable(b, "t", serde.String(), serde.String()).Filter(func(string, string) bool { return true })
				topology.Join(s, tbl, func(_, a, b string) string { return a + b }).To("out")
			},
			want: []string{"the table is not materialized"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := topology.NewBuilder()
			tc.build(b)
			topo, err := b.Build()
			require.Nil(t, topo)
			require.ErrorIs(t, err, topology.ErrInvalidTopology)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}

func TestBuildTwice(t *testing.T) {
	b := topology.NewBuilder()
	topology.NewStream(b, "in", serde.String(), serde.String()).To("out")
	_, err := b.Build()
	require.NoError(t, err)
	_, err = b.Build()
	require.ErrorIs(t, err, topology.ErrInvalidTopology)
}

func TestSourceAndSinkTopics(t *testing.T) {
	topo := wordCount(t)
	require.Equal(t, []string{"text"}, topo.SourceTopics())
	require.Equal(t, []string{"word-counts"}, topo.SinkTopics())
	g := topo.Graph()
	var internal []string
	for _, it := range g.InternalTopics {
		internal = append(internal, it.Topic.Resolve("app"))
	}
	// counts-timestamps: the largest record timestamp per key, which each
	// update carries, as in Kafka Streams (issue 21).
	require.Equal(t, []string{"app-by-word-repartition", "app-counts-changelog", "app-counts-timestamps-changelog"}, internal)
}

func TestWindowedSerdeRoundTrip(t *testing.T) {
	s := topology.WindowedSerde(serde.String())
	w := topology.Windowed[string]{Key: "k", Start: time.UnixMilli(10), End: time.UnixMilli(20)}
	b, err := s.Serialize("t", w)
	require.NoError(t, err)
	got, err := s.Deserialize("t", b)
	require.NoError(t, err)
	require.True(t, got.Start.Equal(w.Start) && got.End.Equal(w.End))
	require.Equal(t, "k", got.Key)
	_, err = s.Deserialize("t", []byte("short"))
	require.ErrorIs(t, err, serde.ErrDeserialize)
}
