package tasks_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/processor"
)

// The query server is up before the runtime is ready, so queries for a
// stale copy (QueryCopy) run while the application switches exactly-once
// on: reading the changelog's end must not race with that switch. Under
// -race this pins that read_committed is published atomically.
func TestQueryCopyWhileExactlyOnceIsSwitchedOn(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		topo, in, _ := countTopology(t, env)
		ctx := context.Background()
		appID, dir := kafkatest.GroupID(t), t.TempDir()
		start := func() *tasks.Runtime {
			rt, err := tasks.New(tasks.Config{
				ApplicationID: appID, Graph: topo.Graph(), Kafka: env.Config(),
				Logger: slog.New(slog.DiscardHandler), Clock: time.Now, StateDir: dir,
			})
			require.NoError(t, err)
			return rt
		}

		// A first run leaves a checkpointed copy of the store in dir.
		rt := start()
		require.NoError(t, rt.Prepare(ctx))
		id := processor.TaskID{Subtopology: 0, Partition: 0}
		task, err := rt.Tasks().Acquire(ctx, id, 1)
		require.NoError(t, err)
		require.NoError(t, task.Process(ctx, kafka.Record{Topic: in, Key: []byte("k"), Value: []byte("k"), Timestamp: time.UnixMilli(1)}))
		require.NoError(t, rt.Commit(ctx, tasks.Positions{}, nil))
		rt.Tasks().Release(task)
		require.NoError(t, rt.Close())

		rt = start()
		defer func() { require.NoError(t, rt.Close()) }()
		var wg sync.WaitGroup
		stop := make(chan struct{})
		copies := 0
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if st, _, err := rt.QueryCopy(ctx, "counts", 0, 1_000_000); err == nil {
					copies++
					_ = st.Close()
				}
			}
		})
		require.NoError(t, rt.EnableExactlyOnce(ctx, appID+"-txn"))
		time.Sleep(50 * time.Millisecond)
		close(stop)
		wg.Wait()
		require.Positive(t, copies, "the copy was never served")
	})
}
