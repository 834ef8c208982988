package epochs

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/embedded"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/kafkatest/kfakehook"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore"
	"github.com/weirstream/weir/third_party/kfake"
	"github.com/weirstream/weir/topology"
)

// eoEngine is an exactly-once engine over a word count (in → counts →
// out) on an embedded broker, its epochs ended by the test.
func eoEngine(t *testing.T) (*Engine, *embedded.Broker) {
	t.Helper()
	ctx := t.Context()
	b, err := embedded.Start(ctx, embedded.Options{Topics: map[string]int32{"in": 1, "out": 1}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	bld := topology.NewBuilder()
	topology.NewStream(bld, "in", serde.String(), serde.String()).
		GroupByKey().Count(topology.Materialized("counts")).ToStream().To("out")
	topo, err := bld.Build()
	require.NoError(t, err)
	rt, err := runtime.New(runtime.Config{
		ApplicationID: "eo-behind", Graph: topo.Graph(), Kafka: kafka.Config{Brokers: b.Addrs()},
		Logger: slog.New(slog.DiscardHandler), Clock: time.Now, StateDir: t.TempDir(),
	})
	require.NoError(t, err)
	require.NoError(t, rt.EnableExactlyOnce(ctx, "eo-behind-txn"))
	e, err := New(rt, Config{EpochInterval: time.Hour})
	require.NoError(t, err)
	require.NoError(t, rt.Prepare(ctx))
	t.Cleanup(func() { _ = rt.Close() })
	return e, b
}

// eoClaim is a fakeClaim whose transactional offset commits need no
// group generation.
type eoClaim struct{ fakeClaim }

func (c *eoClaim) GroupMetadata() kafka.GroupMetadata {
	return kafka.GroupMetadata{GroupID: "eo-behind", GenerationID: -1}
}

// eoHarness drives claims of in/0 on an eoEngine.
type eoHarness struct {
	t *testing.T
	e *Engine
	b *embedded.Broker
}

// claim starts a claim of in/0 and returns it and its outcome.
func (h *eoHarness) claim() (*eoClaim, chan error) {
	c := &eoClaim{fakeClaim{records: make(chan kafka.Record, 8)}}
	done := make(chan error, 1)
	go func() { done <- h.e.drv.Claim(h.t.Context(), c, h.e) }()
	return c, done
}

// process has c process the record at off (key "a") and waits for it.
func (h *eoHarness) process(c *eoClaim, off int64) {
	c.records <- kafka.Record{Topic: "in", Partition: 0, Offset: off, Key: []byte("a"), Value: []byte("a"), Timestamp: time.UnixMilli(off + 1)}
	require.Eventually(h.t, func() bool { return h.e.positions()[tp0] == off+1 }, 10*time.Second, time.Millisecond)
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
	recs, err := kafkatest.ReadStable(h.t.Context(), h.b.Addrs(), "out")
	require.NoError(h.t, err)
	var counts []int64
	for _, r := range recs[0] {
		n, err := serde.Int64().Deserialize("out", r.Value)
		require.NoError(h.t, err)
		counts = append(counts, n)
	}
	return counts
}

// query returns the count of "a" an interactive query reads.
func (h *eoHarness) query() (int64, bool) {
	s, err := h.e.rt.QueryStore("counts", 0)
	require.NoError(h.t, err)
	defer s.Close()
	v, ok, err := s.(statestore.KeyValueStore).Get([]byte("a"))
	require.NoError(h.t, err)
	if !ok {
		return 0, false
	}
	info, err := h.e.rt.Store("counts")
	require.NoError(h.t, err)
	n, err := info.Codec.DecodeValue(v)
	require.NoError(h.t, err)
	return n.(int64), true
}

// holdEndTxn makes the transaction coordinator answer every EndTxn with a
// retriable error: the commit waits, retrying, until the fault is removed.
func (h *eoHarness) holdEndTxn() *kfake.FaultHandle {
	return kfakehook.Cluster(h.b).Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.EndTxn}, Err: kerr.ConcurrentTransactions, Count: -1})
}

// An exactly-once epoch end releases the barrier once the epoch is cut,
// and its transaction commits while the claims go on: a record processed
// meanwhile reads the epoch's state (its task's own writes), while a query
// does not see that state until the transaction has committed; its output
// is held, then sent into the next transaction. A read_committed reader
// sees exact counts, each epoch's once its transaction commits. Before,
// the epoch end held every claim until EndTxn returned.
func TestExactlyOnceEpochCommitsBehind(t *testing.T) {
	e, b := eoEngine(t)
	require.True(t, e.rt.CanCommitBehind())
	h := &eoHarness{t: t, e: e, b: b}
	c, claimed := h.claim()
	h.process(c, 0) // a=1

	hold := h.holdEndTxn()
	h.endEpoch(c)   // epoch 1 commits behind, held
	h.process(c, 1) // a=2, on top of epoch 1's pending layer
	_, ok := h.query()
	require.False(t, ok, "a query saw the state of a transaction not committed")
	require.Empty(t, h.committed())

	hold.Remove()
	require.NoError(t, settle(t.Context(), e)) // epoch 1 committed; a=2 sent into epoch 2's transaction
	require.Equal(t, []int64{1}, h.committed(), "the record processed during the commit is in the next transaction")
	n, ok := h.query()
	require.True(t, ok)
	require.EqualValues(t, 1, n, "a query sees the committed epoch, not the one in progress")

	h.endEpoch(c)
	require.NoError(t, settle(t.Context(), e))
	require.Equal(t, []int64{1, 2}, h.committed())
	require.Equal(t, int64(2), e.Epochs())
	n, _ = h.query()
	require.EqualValues(t, 2, n)
	close(c.records)
	require.NoError(t, <-claimed)
}

// A transaction that aborts while the records of the next epoch are held
// rewinds every claim: the epoch's pending state, the next epoch's staged
// state and the held records are dropped — nothing of either leaks — and
// the records processed again from the committed offsets give exact
// counts.
func TestExactlyOnceAbortBehindDropsTheHeldRecords(t *testing.T) {
	e, b := eoEngine(t)
	h := &eoHarness{t: t, e: e, b: b}
	c, claimed := h.claim()
	h.process(c, 0) // a=1
	h.endEpoch(c)
	require.NoError(t, settle(t.Context(), e))
	require.Equal(t, []int64{1}, h.committed())

	h.process(c, 1) // a=2
	hold := h.holdEndTxn()
	h.endEpoch(c)
	h.process(c, 2) // a=3, held
	// The coordinator fences the producer at the end of epoch 2's commit.
	kfakehook.Cluster(b).Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.EndTxn}, Err: kerr.ProducerFenced})
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
