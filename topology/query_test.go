package topology_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

type keyPoint struct {
	X, Y int
}

// Aggregations and materialized tables record the codecs queries read their
// stores with; keys come as text.
func TestStoreCodecs(t *testing.T) {
	b := topology.NewBuilder()
	words := topology.NewStream(b, "words", serde.String(), serde.String())
	words.GroupByKey().Count(topology.Materialized("counts"))
	topology.WindowedBy(words.GroupByKey(), topology.TumblingWindows(time.Minute)).Count(topology.Materialized("per-minute"))
	topology.NewTable(b, "ids", serde.Int64(), serde.String(), topology.Materialized("names"))
	topology.NewTable(b, "points", serde.JSON[keyPoint](), serde.Int64(), topology.Materialized("at"))
	topo, err := b.Build()
	require.NoError(t, err)
	codecs := topo.Graph().StoreCodecs
	require.Len(t, codecs, 4)

	kb, err := codecs["counts"].ParseKey("stream")
	require.NoError(t, err)
	require.Equal(t, []byte("stream"), kb)
	v, err := codecs["counts"].DecodeValue([]byte{0, 0, 0, 0, 0, 0, 0, 7})
	require.NoError(t, err)
	require.Equal(t, int64(7), v)

	kb, err = codecs["per-minute"].ParseKey("ann")
	require.NoError(t, err, "window stores are keyed by the key inside the window")
	require.Equal(t, []byte("ann"), kb)

	kb, err = codecs["names"].ParseKey("42")
	require.NoError(t, err)
	require.Equal(t, []byte{0, 0, 0, 0, 0, 0, 0, 42}, kb)
	_, err = codecs["names"].ParseKey("forty-two")
	require.ErrorIs(t, err, topology.ErrBadKey)

	kb, err = codecs["at"].ParseKey(`{"X":1,"Y":2}`)
	require.NoError(t, err)
	k, err := codecs["at"].DecodeKey(kb)
	require.NoError(t, err)
	require.Equal(t, keyPoint{1, 2}, k)
	_, err = codecs["at"].ParseKey(`{"X":`)
	require.ErrorIs(t, err, topology.ErrBadKey)
}
