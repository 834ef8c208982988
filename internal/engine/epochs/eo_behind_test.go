package epochs

import (
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/embedded"
	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/engine/tasks/taskstest"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/third_party/kfake"
	"github.com/weirstream/weir/offsets"
	"github.com/weirstream/weir/serde"
)

// eoHarness drives claims of partition 0 of in on an exactly-once engine
// over a word count (in → counts → out), its epochs ended by the test.
type eoHarness struct {
	t       *testing.T
	e       *Engine
	env     *kafkatest.Env
	in, out string
	group   string
}

// newEOHarness starts the engine on env, whose topics in and out
// (one partition each) exist; hooks are the runtime's.
func newEOHarness(t *testing.T, env *kafkatest.Env, in, out, appID string, hooks tasks.Hooks) *eoHarness {
	t.Helper()
	ctx := t.Context()
	topo, err := taskstest.Counting(in, out).Build()
	require.NoError(t, err)
	rt, err := tasks.New(tasks.Config{
		ApplicationID: appID, Graph: topo.Graph(), Kafka: env.Config(),
		Logger: slog.New(slog.DiscardHandler), Clock: time.Now, StateDir: t.TempDir(), Hooks: hooks,
	})
	require.NoError(t, err)
	require.NoError(t, rt.EnableExactlyOnce(ctx, appID+"-txn"))
	e, err := New(rt, Config{EpochInterval: time.Hour})
	require.NoError(t, err)
	require.NoError(t, rt.Prepare(ctx))
	t.Cleanup(func() { _ = rt.Close() })
	return &eoHarness{t: t, e: e, env: env, in: in, out: out, group: appID}
}

// eoClaim is a fakeClaim of partition 0 of a topic, whose transactional
// offset commits need no group generation.
type eoClaim struct {
	fakeClaim
	topic, group string
}

func (c *eoClaim) Topic() string { return c.topic }

func (c *eoClaim) GroupMetadata() kafka.GroupMetadata {
	return kafka.GroupMetadata{GroupID: c.group, GenerationID: -1}
}

// claim starts a claim of in/0 and returns it and its outcome.
func (h *eoHarness) claim() (*eoClaim, chan error) {
	c := &eoClaim{fakeClaim: fakeClaim{records: make(chan kafka.Record, 8)}, topic: h.in, group: h.group}
	done := make(chan error, 1)
	go func() { done <- h.e.drv.Claim(h.t.Context(), c, h.e) }()
	return c, done
}

// process has c process the record at off (key "a") and waits for it.
func (h *eoHarness) process(c *eoClaim, off int64) {
	c.records <- kafka.Record{Topic: h.in, Partition: 0, Offset: off, Key: []byte("a"), Value: []byte("a"), Timestamp: time.UnixMilli(off + 1)}
	tp := offsets.TopicPartition{Topic: h.in}
	require.Eventually(h.t, func() bool { return h.e.positions()[tp] == off+1 }, 10*time.Second, time.Millisecond)
}

// endEpoch ends an epoch as the coordinator does; it must return while
// the epoch's transaction is still committing.
func (h *eoHarness) endEpoch(c *eoClaim) {
	ended := make(chan error, 1)
	go func() { ended <- h.e.endEpoch(h.t.Context(), c, true) }()
	select {
	case err := <-ended:
		require.NoError(h.t, err)
	case <-time.After(10 * time.Second):
		h.t.Fatal("the epoch end waited for its transaction's commit: processing stood still")
	}
}

// committed returns the counts a read_committed reader sees in out.
func (h *eoHarness) committed() []int64 {
	var counts []int64
	for _, r := range kafkatest.ReadCommittedPartitions(h.t, h.env, h.out)[0] {
		n, err := serde.Int64().Deserialize(h.out, r.Value)
		require.NoError(h.t, err)
		counts = append(counts, n)
	}
	return counts
}

// query returns the count of "a" an interactive query reads.
func (h *eoHarness) query() (int64, bool) {
	return taskstest.Count(h.t, h.e.rt.(*tasks.Runtime), "counts", 0, "a")
}

// committedEventually waits until a read_committed reader sees n counts
// in out (Kafka writes a transaction's markers after EndTxn returns) and
// returns them.
func (h *eoHarness) committedEventually(n int) []int64 {
	var seen []int64
	require.Eventually(h.t, func() bool { seen = h.committed(); return len(seen) >= n }, 30*time.Second, 20*time.Millisecond)
	return seen
}

// holdEndTxn makes the kfake transaction coordinator answer every EndTxn
// with a retriable error: the commit waits, retrying, until the fault is
// removed.
func holdEndTxn(env *kafkatest.Env) *kfake.FaultHandle {
	return env.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.EndTxn}, Err: kerr.ConcurrentTransactions, Count: -1})
}

// eoKfake starts an embedded broker with the topics in and out and a
// harness on it.
func eoKfake(t *testing.T) (*eoHarness, *kafkatest.Env) {
	env := kafkatest.Kfake(t, embedded.Options{Topics: map[string]int32{"in": 1, "out": 1}})
	return newEOHarness(t, env, "in", "out", "eo-behind", tasks.Hooks{}), env
}

// An exactly-once epoch end releases the barrier once the epoch is cut,
// and its transaction commits while the claims go on: a record processed
// meanwhile reads the epoch's state (its task's own writes), while a query
// does not see that state until the transaction has committed; its output
// is held, then sent into the next transaction. A read_committed reader
// sees exact counts, each epoch's once its transaction commits. The epoch
// end does not hold the claims until EndTxn returns.
func TestExactlyOnceEpochCommitsBehind(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		in, out := kafkatest.Topic(t), kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, in, 1)
		kafkatest.CreateTopic(t, env, out, 1)
		// The hook runs as the commit behind starts: it holds the
		// transaction's commit while holding is set.
		var holding atomic.Bool
		committing, gate := make(chan struct{}, 1), make(chan struct{})
		hooks := tasks.Hooks{Committing: func() {
			if holding.Load() {
				committing <- struct{}{}
				<-gate
			}
		}}
		h := newEOHarness(t, env, in, out, kafkatest.GroupID(t), hooks)
		c, claimed := h.claim()
		h.process(c, 0) // a=1

		holding.Store(true)
		h.endEpoch(c) // epoch 1 commits behind, held
		<-committing
		holding.Store(false)
		h.process(c, 1) // a=2, on top of epoch 1's pending layer; its output held
		_, ok := h.query()
		require.False(t, ok, "a query saw the state of a transaction not committed")
		require.Empty(t, h.committed())

		close(gate)
		require.NoError(t, settle(t.Context(), h.e)) // epoch 1 committed; a=2 sent into epoch 2's transaction
		require.Equal(t, []int64{1}, h.committedEventually(1), "the record processed during the commit is in the next transaction")
		n, ok := h.query()
		require.True(t, ok)
		require.EqualValues(t, 1, n, "a query sees the committed epoch, not the one in progress")

		h.endEpoch(c)
		require.NoError(t, settle(t.Context(), h.e))
		require.Equal(t, []int64{1, 2}, h.committedEventually(2))
		require.Equal(t, int64(2), h.e.Epochs())
		n, _ = h.query()
		require.EqualValues(t, 2, n)
		close(c.records)
		require.NoError(t, <-claimed)
	})
}

// A transaction that aborts while the records of the next epoch are held
// rewinds every claim: the epoch's pending state, the next epoch's staged
// state and the held records are dropped — nothing of either leaks — and
// the records processed again from the committed offsets give exact
// counts.
func TestExactlyOnceAbortBehindDropsTheHeldRecords(t *testing.T) {
	h, env := eoKfake(t)
	e := h.e
	c, claimed := h.claim()
	h.process(c, 0) // a=1
	h.endEpoch(c)
	require.NoError(t, settle(t.Context(), e))
	require.Equal(t, []int64{1}, h.committed())

	h.process(c, 1) // a=2
	hold := holdEndTxn(env)
	h.endEpoch(c)
	h.process(c, 2) // a=3, held
	// The coordinator fences the producer at the end of epoch 2's commit.
	env.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.EndTxn}, Err: kerr.ProducerFenced})
	hold.Remove()
	require.NoError(t, settle(t.Context(), e)) // rewinds
	require.NoError(t, <-claimed, "the rewound claim returns")
	require.Empty(t, e.positions())
	require.Equal(t, []int64{1}, h.committed(), "a record of an aborted epoch leaked")

	c, claimed = h.claim() // from the committed offset, state restored
	h.process(c, 1)        // a=2
	n, _ := h.query()
	require.EqualValues(t, 1, n, "a query saw an aborted or open epoch's state")
	h.process(c, 2) // a=3
	h.endEpoch(c)
	require.NoError(t, settle(t.Context(), e))
	require.Equal(t, []int64{1, 2, 3}, h.committed(), "counts after the rewind")
	close(c.records)
	require.NoError(t, <-claimed)
}
