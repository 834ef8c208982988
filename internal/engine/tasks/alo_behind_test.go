package tasks_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/engine/tasks/taskstest"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/third_party/kfake"
	"github.com/weirstream/weir/offsets"
	"github.com/weirstream/weir/processor"
)

// aloBehind is an at-least-once runtime over a count of in (partitions
// partitions) that applies state behind its commits, as the continuous
// engine's, and the tasks it acquired.
type aloBehind struct {
	t     *testing.T
	env   *kafkatest.Env
	rt    *tasks.Runtime
	app   string
	in    string
	out   string
	tasks map[int32]*tasks.Task
	next  map[int32]int64
}

func newALOBehind(t *testing.T, env *kafkatest.Env, partitions int32) *aloBehind {
	t.Helper()
	ctx := context.Background()
	in, out := kafkatest.Topic(t), kafkatest.Topic(t)
	kafkatest.CreateTopic(t, env, in, partitions)
	kafkatest.CreateTopic(t, env, out, partitions)
	topo, err := taskstest.Counting(in, out).Build()
	require.NoError(t, err)
	app := kafkatest.GroupID(t)
	rt, err := tasks.New(tasks.Config{
		ApplicationID: app, Graph: topo.Graph(), Kafka: env.Config(),
		Logger: slog.New(slog.DiscardHandler), Clock: time.Now, StateDir: t.TempDir(),
	})
	require.NoError(t, err)
	rt.ApplyStateBehind()
	require.NoError(t, rt.Prepare(ctx))
	t.Cleanup(func() { require.NoError(t, rt.Close()) })
	require.True(t, rt.CanCommitBehind())
	h := &aloBehind{t: t, env: env, rt: rt, app: app, in: in, out: out, tasks: map[int32]*tasks.Task{}, next: map[int32]int64{}}
	for p := range partitions {
		task, err := rt.Tasks().Acquire(ctx, processor.TaskID{Subtopology: 0, Partition: p}, 1)
		require.NoError(t, err)
		h.tasks[p] = task
	}
	return h
}

// process has partition p's task count key k once more.
func (h *aloBehind) process(p int32, k string) {
	off := h.next[p]
	require.NoError(h.t, h.tasks[p].Process(context.Background(), kafka.Record{Topic: h.in, Partition: p, Offset: off, Key: []byte(k), Value: []byte(k), Timestamp: time.UnixMilli(off + 1)}))
	h.next[p] = off + 1
}

// commitBehind cuts an epoch and commits it behind for s, returning the
// commit's outcome.
func (h *aloBehind) commitBehind(s kafka.Session) error {
	return h.commitBehindCtx(context.Background(), s)
}

// commitBehindCtx is commitBehind with the commit's context ctx.
func (h *aloBehind) commitBehindCtx(ctx context.Context, s kafka.Session) error {
	cut, err := h.rt.CutBehind(context.Background(), h.positions(), s, nil)
	require.NoError(h.t, err)
	return h.rt.CommitBehind(ctx, cut, s, nil)
}

// positions are the next offsets of the partitions processed.
func (h *aloBehind) positions() tasks.Positions {
	pos := tasks.Positions{}
	for p, next := range h.next {
		pos[offsets.TopicPartition{Topic: h.in, Partition: p}] = next
	}
	return pos
}

// stoppedWhileOutputsRefused runs process (the epoch's records) and cuts
// the epoch while the output topic refuses every write, retriably — so no
// output is acknowledged, and the cut holds the changelog records for the
// commit behind — then commits it behind with a context a stop ended: the
// commit keeps the epoch, its changelog records not sent. (Records
// processed before the refusal may be acknowledged within the cut's wait,
// and their changelog records then sent under the barrier.)
func (h *aloBehind) stoppedWhileOutputsRefused(s kafka.Session, process func()) {
	h.env.RequireKfake(h.t)
	fault := h.env.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: h.out, Err: kerr.NotEnoughReplicas, Count: -1})
	defer fault.Remove()
	process()
	stopped, stop := context.WithCancel(context.Background())
	stop()
	err := h.commitBehindCtx(stopped, s)
	require.True(h.t, tasks.Stopped(stopped, err), "%v", err)
}

// changelog returns the records of partition p of the counts store's
// changelog, but the writer markers.
func (h *aloBehind) changelog(p int32) []kafka.Record {
	var recs []kafka.Record
	for _, rec := range kafkatest.ReadCommittedPartitions(h.t, h.env, h.app+"-counts-changelog")[p] {
		if !tasks.IsWriterMarker(rec.Headers) {
			recs = append(recs, rec)
		}
	}
	return recs
}

// query returns the count of k a query of partition p reads.
func (h *aloBehind) query(p int32, k string) (int64, bool) {
	return taskstest.Count(h.t, h.rt, "counts", p, k)
}

// stored returns the count of k in partition p's Badger rows.
func (h *aloBehind) stored(p int32, k string) (int64, bool) {
	s, err := tasks.DBReader(h.rt, "counts", p)
	require.NoError(h.t, err)
	defer s.Close()
	return taskstest.CountIn(h.t, h.rt, "counts", s, k)
}

// storedEventually waits until partition p's Badger rows count k n times.
func (h *aloBehind) storedEventually(p int32, k string, n int64) {
	require.Eventually(h.t, func() bool {
		got, ok := h.stored(p, k)
		return ok && got == n
	}, 10*time.Second, 5*time.Millisecond, "partition %d: %s never reached %d in Badger", p, k, n)
}

// commitSession is a member session whose offset commits fail with the
// errors queued in fail, one each, then succeed; it records the offsets
// committed.
type commitSession struct {
	mu        sync.Mutex
	fail      []error
	marked    map[int32]int64
	committed []map[int32]int64
}

func (s *commitSession) MarkOffset(_ string, p int32, next int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.marked == nil {
		s.marked = map[int32]int64{}
	}
	s.marked[p] = next
}

func (s *commitSession) Commit(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(s.fail) > 0 {
		err := s.fail[0]
		s.fail = s.fail[1:]
		return fmt.Errorf("commit: %w", err)
	}
	c := map[int32]int64{}
	for p, n := range s.marked {
		c[p] = n
	}
	s.committed = append(s.committed, c)
	return nil
}

func (s *commitSession) GenerationID() int32                { return 1 }
func (s *commitSession) MemberID() string                   { return "" }
func (s *commitSession) GroupMetadata() kafka.GroupMetadata { return kafka.GroupMetadata{} }

// An at-least-once stateful epoch committed behind whose offset commit
// fails (a rebalance: ErrCommitLater) keeps its state pending — its task
// reads it, queries and Badger do not — and the next successful commit
// applies it, before its own epoch: the epoch's state never stays in the
// staging layer unapplied.
func TestAtLeastOnceCommitBehindKeepsTheEpochForLater(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		h := newALOBehind(t, env, 1)
		s := &commitSession{fail: []error{sarama.ErrRebalanceInProgress}}
		h.process(0, "k")
		require.ErrorIs(t, h.commitBehind(s), tasks.ErrCommitLater)
		_, ok := h.query(0, "k")
		require.False(t, ok, "a query saw the state of an epoch whose offsets are not committed")
		time.Sleep(50 * time.Millisecond)
		_, ok = h.stored(0, "k")
		require.False(t, ok, "the state of an epoch whose offsets are not committed reached Badger")

		h.process(0, "k") // reads the kept layer: k=2
		require.NoError(t, h.commitBehind(s))
		n, ok := h.query(0, "k")
		require.True(t, ok, "the commit did not apply the kept state")
		require.EqualValues(t, 2, n)
		h.storedEventually(0, "k", 2)
		require.Equal(t, []map[int32]int64{{0: 2}}, s.committed)

		h.process(0, "k")
		require.NoError(t, h.commitBehind(s))
		h.storedEventually(0, "k", 3)
		h.rt.Tasks().Release(h.tasks[0])
	})
}

// A task released after an ErrCommitLater behind drops its share of the
// kept layer: a later commit applies the other tasks' kept state, never
// the released task's (its partition may be another member's by then),
// and the release does not wait for that commit.
func TestReleaseDropsTheKeptLayer(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		h := newALOBehind(t, env, 2)
		s := &commitSession{fail: []error{sarama.ErrRebalanceInProgress}}
		h.process(0, "a")
		h.process(1, "b")
		require.ErrorIs(t, h.commitBehind(s), tasks.ErrCommitLater)

		released := make(chan struct{})
		go func() {
			h.rt.Tasks().Release(h.tasks[0])
			close(released)
		}()
		select {
		case <-released:
		case <-time.After(10 * time.Second):
			t.Fatal("the release waited for the kept layer")
		}
		delete(h.tasks, 0)
		delete(h.next, 0)

		require.NoError(t, h.commitBehind(s))
		h.storedEventually(1, "b", 1) // the kept layer, applied after the released task's share left it
		_, ok := h.stored(0, "a")
		require.False(t, ok, "the released task's kept state reached Badger")
		h.rt.Tasks().Release(h.tasks[1])
		_, ok = h.stored(0, "a")
		require.False(t, ok, "the released task's kept state reached Badger")
	})
}

// A member removed from its group (kafka.MemberGone) during an
// at-least-once commit behind rewinds: the epoch's pending layer, and the
// layers kept by an earlier ErrCommitLater, are discarded, and what the
// task did after the cut is dropped (RewindBehind). Its task counts from
// the committed state again.
func TestAtLeastOnceCommitBehindMemberGoneDiscards(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		h := newALOBehind(t, env, 1)
		s := &commitSession{fail: []error{sarama.ErrRebalanceInProgress, sarama.ErrUnknownMemberId}}
		h.process(0, "k")
		require.ErrorIs(t, h.commitBehind(s), tasks.ErrCommitLater) // kept
		h.process(0, "k")
		err := h.commitBehind(s)
		require.ErrorIs(t, err, tasks.ErrRewind)
		h.process(0, "k") // after the cut: dropped by the rewind
		h.rt.RewindBehind(err)
		_, ok := h.query(0, "k")
		require.False(t, ok)

		h.process(0, "k")
		require.NoError(t, h.commitBehind(s))
		n, ok := h.query(0, "k")
		require.True(t, ok, "the commit did not apply its state")
		require.EqualValues(t, 1, n, "state of rewound epochs survived")
		h.storedEventually(0, "k", 1)
		h.rt.Tasks().Release(h.tasks[0])
		n, _ = h.stored(0, "k")
		require.EqualValues(t, 1, n)
	})
}

// An at-least-once commit behind cut short by a stop keeps its epoch's
// state pending, as a deferred offset commit does: the claims' last
// commits, under the barrier, commit the offsets and apply it. Discarded,
// those commits would commit the epoch's offsets without its state.
func TestAtLeastOnceCommitBehindStoppedKeepsTheEpoch(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		h := newALOBehind(t, env, 1)
		s := &commitSession{}
		h.stoppedWhileOutputsRefused(s, func() { h.process(0, "k") })
		_, ok := h.query(0, "k")
		require.False(t, ok)
		require.Empty(t, h.changelog(0), "the stopped commit wrote changelog records")

		h.process(0, "k")
		require.NoError(t, h.rt.Commit(context.Background(), h.positions(), s)) // a claim's last commit
		n, ok := h.query(0, "k")
		require.True(t, ok, "the last commit did not apply the kept state")
		require.EqualValues(t, 2, n)
		h.rt.Tasks().Release(h.tasks[0])
		n, _ = h.stored(0, "k")
		require.EqualValues(t, 2, n)
		require.Equal(t, []map[int32]int64{{0: 2}}, s.committed)
		require.Len(t, h.changelog(0), 2, "the last commit did not write the kept epoch's changelog record, then its own")
	})
}

// A task released while a stopped at-least-once commit behind kept its
// epoch drops that epoch's changelog records not sent yet, with its
// state: the next commit sends the other tasks' only. Written after the
// release, they would land in a changelog partition that may be another
// member's by then, after its restore.
func TestReleaseDropsTheKeptChangelog(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		h := newALOBehind(t, env, 2)
		s := &commitSession{}
		h.stoppedWhileOutputsRefused(s, func() {
			h.process(0, "a")
			h.process(1, "b")
		})

		h.rt.Tasks().Release(h.tasks[0])
		delete(h.tasks, 0)
		delete(h.next, 0)
		require.NoError(t, h.commitBehind(s))
		require.Len(t, h.changelog(1), 1, "the kept changelog record of the task still held was not written")
		require.Empty(t, h.changelog(0), "the released task's kept changelog record was written")
		h.storedEventually(1, "b", 1)
		h.rt.Tasks().Release(h.tasks[1])
		_, ok := h.stored(0, "a")
		require.False(t, ok, "the released task's kept state reached Badger")
	})
}
