package topologytest_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore"
	"github.com/weirstream/weir/topology"
	"github.com/weirstream/weir/topologytest"
)

// Records piped into a global table's topic update its store at once and
// write nothing; one with a null key is dropped and counted, one the serdes
// cannot read goes to OnError.
func TestGlobalTableInput(t *testing.T) {
	b := topology.NewBuilder()
	prices := topology.NewGlobalTable(b, "prices", serde.String(), serde.Int64(), topology.Materialized("prices"))
	orders := topology.NewStream(b, "orders", serde.String(), serde.String())
	topology.JoinGlobal(orders, prices, func(_, item string) (string, bool) { return item, true },
		func(_, _ string, p int64) int64 { return p }).To("out")
	topo, err := b.Build()
	require.NoError(t, err)
	var bad []*processor.RecordError
	d, err := topologytest.New(topo, topologytest.Config{OnError: func(re *processor.RecordError) error {
		bad = append(bad, re)
		return nil
	}})
	require.NoError(t, err)
	defer d.Close()

	in := topologytest.Input(d, "prices", serde.String(), serde.Int64())
	require.NoError(t, in.Pipe("pen", 3, time.UnixMilli(1)))
	require.NoError(t, d.PipeRaw("prices", nil, []byte("xxxxxxxx"), time.UnixMilli(2)))
	require.NoError(t, d.PipeRaw("prices", []byte("ink"), []byte("bad"), time.UnixMilli(3)))
	require.Empty(t, d.Topics(), "a global table's updates write nothing")
	require.Len(t, bad, 1)
	require.Equal(t, processor.DeserializationError, bad[0].Kind)
	require.Equal(t, int64(1), d.Counters()[processor.MetricDroppedNull])

	s, err := d.Store("prices")
	require.NoError(t, err)
	v, ok, err := statestore.NewKV(s.(statestore.KeyValueStore), serde.String(), serde.Int64()).Get("pen")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(3), v)

	require.NoError(t, topologytest.Input(d, "orders", serde.String(), serde.String()).Pipe("o1", "pen", time.UnixMilli(4)))
	got, err := topologytest.Output(d, "out", serde.String(), serde.Int64()).ReadKeyValues()
	require.NoError(t, err)
	require.Equal(t, []processor.KeyValue[string, int64]{{Key: "o1", Value: 3}}, got)
}
