// Package taskstest holds test helpers over a tasks.Runtime shared by
// the runtime's and the engines' tests.
//
//	topo, err := taskstest.Counting("in", "out").Build() // in → count "counts" → out
//	n, ok := taskstest.Count(t, rt, "counts", 0, "k")   // what a query reads
//	n, ok = taskstest.CountIn(t, rt, "counts", badgerReader, "k")
package taskstest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore"
	"github.com/weirstream/weir/topology"
)

// Counting builds the topology these tests count with: string records of
// in, counted per key in the store "counts", the counts written to out.
func Counting(in, out string) *topology.Builder {
	b := topology.NewBuilder()
	topology.NewStream(b, in, serde.String(), serde.String()).
		GroupByKey().Count(topology.Materialized("counts")).ToStream().To(out)
	return b
}

// Count returns the int64 an interactive query of the key-value store's
// partition reads for key (a Count's value), and whether the key is there.
func Count(t testing.TB, rt *tasks.Runtime, store string, partition int32, key string) (int64, bool) {
	t.Helper()
	s, err := rt.QueryStore(store, partition)
	require.NoError(t, err)
	defer s.Close()
	return CountIn(t, rt, store, s, key)
}

// CountIn is Count for a reader s of the store's rows (a query's handle,
// or Badger's).
func CountIn(t testing.TB, rt *tasks.Runtime, store string, s statestore.Store, key string) (int64, bool) {
	t.Helper()
	v, ok, err := s.(statestore.KeyValueStore).Get([]byte(key))
	require.NoError(t, err)
	if !ok {
		return 0, false
	}
	info, err := rt.Store(store)
	require.NoError(t, err)
	n, err := info.Codec.DecodeValue(v)
	require.NoError(t, err)
	return n.(int64), true
}
