package topologytest_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
	"github.com/weirstream/weir/topologytest"
)

func TestRestartRestoresStoresFromTheChangelog(t *testing.T) {
	b := topology.NewBuilder()
	words := topology.NewStream(b, "words", serde.String(), serde.String())
	topology.GroupBy(words, func(_, w string) string { return w }).
		Count(topology.Materialized("counts")).ToStream().To("counts")
	topo, err := b.Build()
	require.NoError(t, err)

	d, err := topologytest.New(topo, topologytest.Config{})
	require.NoError(t, err)
	in := topologytest.Input(d, "words", serde.String(), serde.String())
	require.NoError(t, in.Pipe("", "a", time.UnixMilli(1)))
	require.NoError(t, in.Pipe("", "a", time.UnixMilli(2)))
	out := topologytest.Output(d, "counts", serde.String(), serde.Int64())
	_, err = out.ReadKeyValues()
	require.NoError(t, err)

	d2, err := d.Restart()
	require.NoError(t, err)
	defer d2.Close()
	require.Error(t, in.Pipe("", "a", time.UnixMilli(3)), "the old driver is closed")
	require.NoError(t, topologytest.Input(d2, "words", serde.String(), serde.String()).Pipe("", "a", time.UnixMilli(3)))
	got, err := topologytest.Output(d2, "counts", serde.String(), serde.Int64()).ReadKeyValues()
	require.NoError(t, err)
	require.Equal(t, []processor.KeyValue[string, int64]{{Key: "a", Value: 3}}, got,
		"the count goes on from the restored store; records read before stay read")
	require.Len(t, d2.Topic("counts"), 3, "the topic keeps what the first driver wrote")

	d3, err := d2.Restart()
	require.NoError(t, err)
	defer d3.Close()
	counts, err := topologytest.KeyValueStore(d3, "counts", serde.String(), serde.Int64())
	require.NoError(t, err)
	n, _, err := counts.Get("a")
	require.NoError(t, err)
	require.Equal(t, int64(3), n, "a second restart restores from the whole changelog")
}
