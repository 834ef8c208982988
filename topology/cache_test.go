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

// cachedCount runs in → GroupByKey → Count → out as one task, with the
// record cache of budget (nil: off); it returns the task and the sink's
// outputs so far.
func cachedCount(t *testing.T, budget *statestore.CacheBudget) (*processor.Task, *[]processor.KeyValue[string, int64], *[]time.Time) {
	t.Helper()
	b := topology.NewBuilder()
	topology.NewStream(b, "in", serde.String(), serde.String()).
		GroupByKey().Count(topology.Materialized("counts")).ToStream().To("out")
	topo, err := b.Build()
	require.NoError(t, err)
	var got []processor.KeyValue[string, int64]
	var stamps []time.Time
	task, err := processor.NewTask(topo.Graph(), processor.TaskConfig{
		ApplicationID: "app", Stores: statestore.NewInMemoryFactory(), CacheBudget: budget,
		Emit: func(o processor.Output) error {
			if o.Topic == "out" {
				n, err := serde.Int64().Deserialize(o.Topic, o.Value)
				require.NoError(t, err)
				got = append(got, processor.KeyValue[string, int64]{Key: string(o.Key), Value: n})
				stamps = append(stamps, o.Timestamp)
			}
			return nil
		},
	})
	require.NoError(t, err)
	return task, &got, &stamps
}

func pipe(t *testing.T, task *processor.Task, off int64, key string, ts int64) {
	t.Helper()
	require.NoError(t, task.Process(processor.RawRecord{
		Topic: "in", Offset: off, Key: []byte(key), Value: []byte("v"), Timestamp: time.UnixMilli(ts),
	}))
}

func countOf(t *testing.T, task *processor.Task, key string) int64 {
	t.Helper()
	s, ok := task.Store("counts")
	require.True(t, ok)
	n, found, err := statestore.NewKV(s.(statestore.KeyValueStore), serde.String(), serde.Int64()).Get(key)
	require.NoError(t, err)
	require.True(t, found)
	return n
}

func TestCountWithoutCacheForwardsEveryUpdate(t *testing.T) {
	task, got, _ := cachedCount(t, nil)
	for i, k := range []string{"a", "a", "b", "a"} {
		pipe(t, task, int64(i), k, 1)
	}
	require.Equal(t, []processor.KeyValue[string, int64]{{Key: "a", Value: 1}, {Key: "a", Value: 2}, {Key: "b", Value: 1}, {Key: "a", Value: 3}}, *got)
	require.NoError(t, task.FlushCache())
	require.Len(t, *got, 4, "nothing cached")
}

func TestCountWithCacheForwardsLatestAtFlush(t *testing.T) {
	budget, err := statestore.NewCacheBudget(1 << 20)
	require.NoError(t, err)
	task, got, stamps := cachedCount(t, budget)
	pipe(t, task, 0, "a", 5)
	pipe(t, task, 1, "a", 3) // out of order: the key keeps its largest timestamp
	pipe(t, task, 2, "b", 4)
	pipe(t, task, 3, "a", 2)
	require.Empty(t, *got, "updates wait in the cache for the commit")
	require.Equal(t, int64(3), countOf(t, task, "a"), "the store is written on every update")
	require.Positive(t, budget.Used())

	require.NoError(t, task.FlushCache())
	// One record per key, its latest count, least recently updated first.
	require.Equal(t, []processor.KeyValue[string, int64]{{Key: "b", Value: 1}, {Key: "a", Value: 3}}, *got)
	require.Equal(t, []time.Time{time.UnixMilli(4), time.UnixMilli(5)}, *stamps)
	require.Zero(t, budget.Used())

	// The next interval counts on from the store.
	pipe(t, task, 4, "a", 6)
	require.NoError(t, task.FlushCache())
	require.Equal(t, processor.KeyValue[string, int64]{Key: "a", Value: 4}, (*got)[2])
}

func TestCountWithCacheEvictsWhenOverBudget(t *testing.T) {
	// Room for about two entries ("a"/"b"/"c" key, 8-byte count and its
	// 8-byte timestamp, the entry overhead).
	budget, err := statestore.NewCacheBudget(2 * (1 + 16 + statestore.CacheEntryOverhead))
	require.NoError(t, err)
	task, got, _ := cachedCount(t, budget)
	pipe(t, task, 0, "a", 1)
	pipe(t, task, 1, "b", 1)
	pipe(t, task, 2, "a", 1)
	require.Empty(t, *got)
	pipe(t, task, 3, "c", 1) // evicts b, the least recently used
	require.Equal(t, []processor.KeyValue[string, int64]{{Key: "b", Value: 1}}, *got)
	require.NoError(t, task.FlushCache())
	require.Equal(t, []processor.KeyValue[string, int64]{{Key: "b", Value: 1}, {Key: "a", Value: 2}, {Key: "c", Value: 1}}, *got)
}

func TestCountWithCacheAbortDiscardsIt(t *testing.T) {
	budget, err := statestore.NewCacheBudget(1 << 20)
	require.NoError(t, err)
	task, got, _ := cachedCount(t, budget)
	pipe(t, task, 0, "a", 1)
	pipe(t, task, 1, "a", 1)
	// An aborted epoch: the engine drops the staged writes and the
	// changelog, and with them the cached updates.
	task.DiscardChangelog()
	require.Zero(t, budget.Used())
	require.NoError(t, task.FlushCache())
	require.Empty(t, *got)
}

func TestCountWithCacheCloseReturnsBytes(t *testing.T) {
	budget, err := statestore.NewCacheBudget(1 << 20)
	require.NoError(t, err)
	task, got, _ := cachedCount(t, budget)
	pipe(t, task, 0, "a", 1)
	require.NoError(t, task.Close())
	require.Zero(t, budget.Used())
	require.NoError(t, task.FlushCache())
	require.Empty(t, *got)
}
