package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/statestore"
)

// A restore applies its changelog in batches while it reads on. One that
// stops in the middle — its context cancelled while a batch fills, or a
// batch's Badger write failing — leaves a checkpoint at the end of the
// last batch it applied, and the next restore reads on from there: the
// store then holds each key's last value in the changelog, and none of the
// keys whose last record is a tombstone. The first restore starts from an
// empty store, so its batches go through badgerstore.DB.ApplyFresh; the
// second, from its checkpoint, through Apply over them.
func TestRestoreStoppedMidBatchResumes(t *testing.T) {
	for _, stop := range []string{"cancelled", "apply failed"} {
		t.Run(stop, func(t *testing.T) {
			kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
				testRestoreStoppedMidBatch(t, env, stop)
			})
		})
	}
}

func testRestoreStoppedMidBatch(t *testing.T, env *kafkatest.Env, stop string) {
	topo, _, _ := countTopology(t, env)
	appID := kafkatest.GroupID(t)
	changelog := processor.ChangelogTopic("counts").Resolve(appID)
	kafkatest.CreateTopic(t, env, changelog, 1, map[string]string{"cleanup.policy": "compact"})
	rng := rand.New(rand.NewPCG(kafkatest.Seed(t), 0))

	// Six batches' worth of writes to 2,000 keys, one in ten a tombstone.
	n := 6 * tasks.RestoreBatch
	want := map[string]string{}
	recs := make([]kafka.Record, 0, n)
	for i := range n {
		k := fmt.Sprintf("k%04d", rng.IntN(2000))
		rec := kafka.Record{Topic: changelog, Partition: 0, Key: []byte(k)}
		if rng.IntN(10) == 0 {
			delete(want, k)
		} else {
			rec.Value = fmt.Appendf(nil, "v%d", i)
			want[k] = string(rec.Value)
		}
		recs = append(recs, rec)
	}
	kafkatest.Produce(t, env, recs...)

	ctx := context.Background()
	dir := t.TempDir()
	id := processor.TaskID{Subtopology: 0, Partition: 0}
	var reported atomic.Int64 // the records the Restored hook reported
	open := func() *tasks.Runtime {
		rt, err := tasks.New(tasks.Config{
			ApplicationID: appID, Graph: topo.Graph(), Kafka: env.Config(),
			Logger: slog.New(slog.DiscardHandler), Clock: time.Now, StateDir: dir,
			Hooks: tasks.Hooks{Restored: func(store string, records int64, took time.Duration) {
				require.Equal(t, "counts", store)
				require.Positive(t, took)
				reported.Add(records)
			}},
		})
		require.NoError(t, err)
		require.NoError(t, rt.Prepare(ctx))
		return rt
	}

	// The first restore stops after two batches are written, while the
	// reader fills the next ones.
	rt := open()
	stopCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	failed := errors.New("disk on fire")
	var batches atomic.Int32
	tasks.SetBeforeRestoreApply(rt, func() error {
		if batches.Add(1) <= 2 {
			return nil
		}
		if stop == "cancelled" {
			cancel()
			time.Sleep(10 * time.Millisecond) // the reader sees it mid-batch
			return nil
		}
		return failed
	})
	_, err := rt.Tasks().Acquire(stopCtx, id, 1)
	require.Error(t, err)
	if stop == "cancelled" {
		require.ErrorIs(t, err, context.Canceled)
	} else {
		require.ErrorIs(t, err, failed)
	}
	at, ok, err := tasks.StoreCheckpoint(rt, "counts", 0)
	require.NoError(t, err)
	require.True(t, ok, "no checkpoint after two batches")
	require.GreaterOrEqual(t, at, int64(2*tasks.RestoreBatch), "the checkpoint is behind the batches applied")
	require.Less(t, at, int64(n), "the restore did not stop")
	require.NoError(t, rt.Close())

	// The next restore reads on from the checkpoint.
	rt = open()
	defer func() { require.NoError(t, rt.Close()) }()
	restored := rt.Stats().Restored.Load()
	task, err := rt.Tasks().Acquire(ctx, id, 2)
	require.NoError(t, err)
	defer rt.Tasks().Release(task)
	require.Less(t, rt.Stats().Restored.Load()-restored, int64(n), "the second restore started over")
	require.Equal(t, rt.Stats().Restored.Load()-restored, reported.Load(), "the Restored hook's records")

	s, err := tasks.DBReader(rt, "counts", 0)
	require.NoError(t, err)
	defer s.Close()
	kv, ok := s.(statestore.KeyValueStore)
	require.True(t, ok, "%T is not a key-value store", s)
	it, err := kv.Range(nil, nil)
	require.NoError(t, err)
	defer it.Close()
	got := map[string]string{}
	for it.Next() {
		got[string(it.Key())] = string(it.Value())
	}
	require.NoError(t, it.Err())
	require.Equal(t, want, got)
}
