package tasks_test

import (
	"context"
	"log/slog"
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

// A claim whose member is out of its group — kgo reports generation -1
// once the coordinator answered UNKNOWN_MEMBER_ID, and a claim started
// then acquires its task with it — is a zombie: the partition is another
// member's. Its task must not take the current owner's writer generation
// from the changelog, or its stale changelog records (here k=3, written
// after the owner's k=5) are indistinguishable from the owner's, and a
// restore applies them: the store goes back in time, and the owner's next
// update builds on the old value (the reliability suite's aggregate gone
// back to an account's first input, PostgreSQL branches, Kafka 4.4, seed 3).
func TestAZombieWithoutAGenerationDoesNotWriteAsTheOwner(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		zombieWrites(t, env, func(ts *tasks.Tasks, id processor.TaskID) (*tasks.Task, error) {
			return ts.Acquire(context.Background(), id, -1)
		})
	})
}

// A member removed from its group that still holds its last generation
// and member id (a process stalled past its session timeout) and starts
// its claims again — a rewind ended them — acquires the task with its old
// generation, older than the one the new owner wrote to the changelog.
// The coordinator no longer knows the member, or its generation is over:
// the task keeps its old generation and processes nothing.
func TestARemovedMemberDoesNotTakeTheOwnersGeneration(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		group, topic := kafkatest.GroupID(t), kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, topic, 1)
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(env.Brokers...), kgo.ConsumerGroup(group),
			kgo.ConsumeTopics(topic)}, env.ClientOpts...)...)
		require.NoError(t, err)
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for { // the group has a live member, in generation gen
			if _, gen := cl.GroupMetadata(); gen > 0 {
				break
			}
			pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
			cl.PollFetches(pctx)
			pcancel()
			require.NoError(t, ctx.Err(), "the consumer never joined its group")
		}
		t.Run("unknown member", func(t *testing.T) {
			zombieWrites(t, env, func(ts *tasks.Tasks, id processor.TaskID) (*tasks.Task, error) {
				return ts.AcquireIn(context.Background(), id, removedMember{group: group, member: "removed-member", generation: 5})
			})
		})
		// The member rejoined under the same id in a newer generation: the
		// claim's generation is over (ILLEGAL_GENERATION).
		t.Run("older generation", func(t *testing.T) {
			live, _ := cl.GroupMetadata()
			zombieWrites(t, env, func(ts *tasks.Tasks, id processor.TaskID) (*tasks.Task, error) {
				return ts.AcquireIn(context.Background(), id, removedMember{group: group, member: live, generation: 5})
			})
		})
	})
}

// removedMember is the session of a member its group no longer knows.
type removedMember struct {
	kafka.Session
	group, member string
	generation    int32
}

func (s removedMember) MemberID() string    { return s.member }
func (s removedMember) GenerationID() int32 { return s.generation }
func (s removedMember) GroupMetadata() kafka.GroupMetadata {
	return kafka.GroupMetadata{GroupID: s.group, MemberID: s.member, GenerationID: s.generation}
}

// zombieWrites has an owner (generation 7) count k to 2, a zombie acquire
// the task (acquire) and restore k=2, the owner count k to 5, then the
// zombie process k — it must refuse (ErrRewind): counted to 3 and
// committed, a restore from the changelog's start would apply it after
// the owner's 5 — and the next owner count k to 6.
func zombieWrites(t *testing.T, env *kafkatest.Env, acquire func(*tasks.Tasks, processor.TaskID) (*tasks.Task, error)) {
	topo, in, out := countTopology(t, env)
	appID := kafkatest.GroupID(t)
	ctx := context.Background()
	id := processor.TaskID{Subtopology: 0, Partition: 0}

	type member struct {
		rt   *tasks.Runtime
		task *tasks.Task
	}
	start := func(dir string, acquire func(*tasks.Tasks, processor.TaskID) (*tasks.Task, error)) member {
		rt, err := tasks.New(tasks.Config{
			ApplicationID: appID, Graph: topo.Graph(), Kafka: env.Config(),
			Logger: slog.New(slog.DiscardHandler), Clock: time.Now, StateDir: dir,
		})
		require.NoError(t, err)
		require.NoError(t, rt.Prepare(ctx))
		task, err := acquire(rt.Tasks(), id)
		require.NoError(t, err)
		return member{rt, task}
	}
	join := func(dir string, generation int32) member {
		return start(dir, func(ts *tasks.Tasks, id processor.TaskID) (*tasks.Task, error) {
			return ts.Acquire(ctx, id, generation)
		})
	}
	offset := int64(0)
	process := func(m member, keys ...string) {
		for _, k := range keys {
			require.NoError(t, m.task.Process(ctx, kafka.Record{Topic: in, Partition: 0, Offset: offset, Key: []byte(k), Value: []byte(k), Timestamp: time.UnixMilli(offset + 1)}))
			offset++
		}
		require.NoError(t, m.rt.Commit(ctx, tasks.Positions{}, nil))
	}
	leave := func(m member) {
		m.rt.Tasks().Release(m.task)
		require.NoError(t, m.rt.Close())
	}
	last := func(key string) int64 {
		var n int64
		found := false
		for _, rec := range kafkatest.ReadCommitted(t, env, out) {
			if string(rec.Key) == key {
				v, err := serde.Int64().Deserialize(out, rec.Value)
				require.NoError(t, err)
				n, found = v, true
			}
		}
		require.True(t, found, "no output for %q", key)
		return n
	}

	owner := join(t.TempDir(), 7)
	process(owner, "k", "k") // k=2
	zombie := start(t.TempDir(), acquire)
	process(owner, "k", "k", "k") // k=5
	// The zombie's k=3, after the owner's k=5: refused (the engine
	// rewinds, its claims end), and written with the zombie's generation
	// should a commit carry it anyway.
	err := zombie.task.Process(ctx, kafka.Record{Topic: in, Partition: 0, Offset: offset, Key: []byte("k"), Value: []byte("k"), Timestamp: time.UnixMilli(offset + 1)})
	require.ErrorIs(t, err, tasks.ErrRewind, "a zombie's task processed a record")
	require.NoError(t, zombie.rt.Commit(ctx, tasks.Positions{}, nil))
	leave(zombie)
	leave(owner)

	next := join(t.TempDir(), 8) // restores from the changelog's start
	process(next, "k")
	require.Equal(t, int64(6), last("k"), "the restore applied the zombie's k=3")
	leave(next)
}
