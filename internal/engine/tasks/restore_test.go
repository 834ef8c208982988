package tasks_test

import (
	"context"
	"log/slog"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
)

// Under exactly-once a restore waits for the changelog's undecided
// transactions instead of stopping at the last stable offset. The previous
// owner's last transaction can be committed, and its input offsets stable
// to the new owner's offset fetch, before the transaction's marker reaches
// the changelog partition: restored only to the last stable offset, the
// new owner ran on without that transaction's state, and a running sum
// came out short from then on (CI's TestQueryAvailabilityUnderChurn,
// micro-batch on Kafka 4.4: input offsets at the end, 18 of 40 sums short).
//
// Here the late transaction is written by hand: a copy of a store's
// changelog (the count k=1 committed, the count k=2 in a transaction left
// open) for a second application; the second
// application's task restores while the transaction is open, and the
// transaction commits 500 ms later. Counting k once more must give 3.
func TestRestoreWaitsForTheChangelogsOpenTransaction(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		topo, in, out := countTopology(t, env)
		ctx := context.Background()
		id := processor.TaskID{Subtopology: 0, Partition: 0}
		start := func(appID string) *tasks.Runtime {
			rt, err := tasks.New(tasks.Config{
				ApplicationID: appID, Graph: topo.Graph(), Kafka: env.Config(),
				Logger: slog.New(slog.DiscardHandler), Clock: time.Now, StateDir: t.TempDir(),
			})
			require.NoError(t, err)
			require.NoError(t, rt.EnableExactlyOnce(ctx, appID+"-txn"))
			require.NoError(t, rt.Prepare(ctx))
			return rt
		}
		process := func(rt *tasks.Runtime, task *tasks.Task, offset int64) {
			require.NoError(t, task.Process(ctx, kafka.Record{Topic: in, Partition: 0, Offset: offset, Key: []byte("k"), Value: []byte("k"), Timestamp: time.UnixMilli(offset + 1)}))
			require.NoError(t, rt.Commit(ctx, tasks.Positions{}, noOffsets{}))
		}

		// The first application counts k twice, one commit each: its
		// changelog holds k=1 and k=2.
		first := kafkatest.GroupID(t)
		a := start(first)
		task, err := a.Tasks().Acquire(ctx, id, 1)
		require.NoError(t, err)
		process(a, task, 0)
		process(a, task, 1)
		a.Tasks().Release(task)
		require.NoError(t, a.Close())
		changelog := kafkatest.ReadCommitted(t, env, processor.ChangelogTopic("counts").Resolve(first))
		require.Len(t, changelog, 2, "k=1 and k=2")

		// The second application's changelog gets k=1 committed, and k=2
		// in a transaction that stays open.
		second := kafkatest.GroupID(t)
		c := start(second)
		topic := processor.ChangelogTopic("counts").Resolve(second)
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(env.Brokers...),
			kgo.TransactionalID(second + "-previous-owner"), kgo.DefaultProduceTopic(topic)}, env.ClientOpts...)...)
		require.NoError(t, err)
		defer cl.Close()
		produce := func(recs ...kafka.Record) {
			require.NoError(t, cl.BeginTransaction())
			for _, r := range recs {
				var hs []kgo.RecordHeader
				for _, h := range r.Headers {
					hs = append(hs, kgo.RecordHeader{Key: h.Key, Value: h.Value})
				}
				require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Key: r.Key, Value: r.Value, Headers: hs}).FirstErr())
			}
		}
		produce(changelog[0])
		require.NoError(t, cl.EndTransaction(ctx, kgo.TryCommit))
		produce(changelog[1])
		decided := make(chan error, 1)
		go func() {
			time.Sleep(500 * time.Millisecond)
			decided <- cl.EndTransaction(ctx, kgo.TryCommit)
		}()

		task, err = c.Tasks().Acquire(ctx, id, 2) // restores
		require.NoError(t, err)
		require.NoError(t, <-decided)
		process(c, task, 2)
		c.Tasks().Release(task)
		require.NoError(t, c.Close())

		// EndTxn returns before the commit markers reach the partitions:
		// wait until the output has no undecided records left (its last
		// stable offset is its high watermark) before reading it.
		require.Eventually(t, func() bool {
			hw, err := kafkatest.EndOffsets(ctx, env.Brokers, out, false)
			require.NoError(t, err)
			stable, err := kafkatest.EndOffsets(ctx, env.Brokers, out, true)
			require.NoError(t, err)
			return maps.Equal(hw, stable)
		}, 30*time.Second, 20*time.Millisecond, "the output's transactions are decided")
		var last int64
		var counts []int64 // both applications' outputs, for the failure message
		for _, rec := range kafkatest.ReadCommitted(t, env, out) {
			last, err = serde.Int64().Deserialize(out, rec.Value)
			require.NoError(t, err)
			counts = append(counts, last)
		}
		require.Equal(t, int64(3), last, "the restore left out the transaction undecided when it began (outputs %v)", counts)
	})
}

// noOffsets is the group session of a transaction that commits no input
// offsets: its records and state only.
type noOffsets struct{}

func (noOffsets) MarkOffset(string, int32, int64)    {}
func (noOffsets) Commit(context.Context) error       { return nil }
func (noOffsets) GenerationID() int32                { return 1 }
func (noOffsets) MemberID() string                   { return "" }
func (noOffsets) GroupMetadata() kafka.GroupMetadata { return kafka.GroupMetadata{} }
