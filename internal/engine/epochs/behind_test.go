package epochs

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/embedded"
	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/engine/tasks/taskstest"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest/kfakehook"
	"github.com/weirstream/weir/internal/third_party/kfake"
	"github.com/weirstream/weir/offsets"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

// behindEngine is an engine over a stateless topology on an embedded
// broker, its epochs ended by the test.
func behindEngine(t *testing.T, wal *offsets.WAL) (*Engine, *embedded.Broker) {
	t.Helper()
	return topologyEngine(t, stateless(), wal, tasks.Hooks{})
}

// stateless is a topology that copies in to out.
func stateless() *topology.Builder {
	bld := topology.NewBuilder()
	topology.NewStream(bld, "in", serde.String(), serde.String()).To("out")
	return bld
}

// countingEngine is behindEngine over a count (in → counts → out).
func countingEngine(t *testing.T) (*Engine, *embedded.Broker) {
	t.Helper()
	return topologyEngine(t, taskstest.Counting("in", "out"), nil, tasks.Hooks{})
}

// topologyEngine is an at-least-once engine over the topology bld builds
// (in → out) on an embedded broker, its epochs ended by the test; hooks
// are its runtime's.
func topologyEngine(t *testing.T, bld *topology.Builder, wal *offsets.WAL, hooks tasks.Hooks) (*Engine, *embedded.Broker) {
	t.Helper()
	ctx := t.Context()
	b, err := embedded.Start(ctx, embedded.Options{Topics: map[string]int32{"in": 1, "out": 1}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	topo, err := bld.Build()
	require.NoError(t, err)
	rt, err := tasks.New(tasks.Config{
		ApplicationID: "behind", Graph: topo.Graph(), Kafka: kafka.Config{Brokers: b.Addrs()},
		Logger: slog.New(slog.DiscardHandler), Clock: time.Now, StateDir: t.TempDir(), Hooks: hooks,
	})
	require.NoError(t, err)
	require.NoError(t, rt.Prepare(ctx))
	t.Cleanup(func() { _ = rt.Close() })
	e, err := New(rt, Config{EpochInterval: time.Hour, EpochLog: wal})
	require.NoError(t, err)
	return e, b
}

// An at-least-once epoch of a stateless topology commits behind: while
// its outputs wait for their acknowledgement the claims go on processing,
// and its offset is committed only once they are acknowledged. The epoch
// end does not hold the claims for the flush and the offset commit.
func TestAtLeastOnceEpochCommitsBehind(t *testing.T) {
	ctx := t.Context()
	e, b := behindEngine(t, nil)
	require.True(t, e.rt.CanCommitBehind())

	// Every produce is refused as retriable: outputs wait in the
	// producer's retries, and so does the epoch's flush.
	fault := kfakehook.Cluster(b).Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.NotEnoughReplicas, Count: -1})
	c := &markingClaim{fakeClaim: fakeClaim{records: make(chan kafka.Record, 4)}}
	claimed := make(chan error, 1)
	go func() { claimed <- e.drv.Claim(ctx, c, e) }()
	send := func(off int64) { processed(t, e, c, off) }
	send(0)

	endsAtOnce(t, e, c)
	send(1) // processed while epoch 1's flush waits
	require.Empty(t, c.marked(), "an offset committed before its outputs were acknowledged")

	fault.Remove()
	require.NoError(t, e.endEpoch(ctx, c, true)) // waits for epoch 1's commit, starts epoch 2's
	require.NoError(t, settle(ctx, e))
	require.Equal(t, []int64{1, 2}, c.marked(), "each epoch commits its offset, in order")
	require.Equal(t, int64(2), e.Epochs())

	close(c.records)
	require.NoError(t, <-claimed)
}

// A commit behind that lags stops the claims: once it has run an interval
// past the start of the next epoch end, that end takes the barrier before
// it waits, so records are not processed while the broker refuses the
// epoch's outputs — a crash would duplicate every one of them. Processing
// resumes when the commit ends; the claims do not run on for as long as
// the broker refuses.
func TestAtLeastOnceClaimsWaitForACommitBehindThatLags(t *testing.T) {
	ctx := t.Context()
	var waitedMu sync.Mutex
	var waited time.Duration // the commit_wait phase
	e, b := topologyEngine(t, stateless(), nil, tasks.Hooks{Phase: func(phase string, took time.Duration) {
		if phase == tasks.PhaseCommitWait {
			waitedMu.Lock()
			waited += took
			waitedMu.Unlock()
		}
	}})
	e.cfg.EpochInterval = 20 * time.Millisecond // the grace of a lagging commit
	fault := kfakehook.Cluster(b).Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.NotEnoughReplicas, Count: -1})
	c := &markingClaim{fakeClaim: fakeClaim{records: make(chan kafka.Record, 4)}}
	claimed := make(chan error, 1)
	go func() { claimed <- e.drv.Claim(ctx, c, e) }()
	processed(t, e, c, 0)
	endsAtOnce(t, e, c) // epoch 1's flush waits on the fault

	ended := make(chan error, 1)
	go func() { ended <- e.endEpoch(ctx, c, true) }()
	time.Sleep(10 * e.cfg.EpochInterval) // past the grace: epoch 2's end holds the barrier
	c.records <- kafka.Record{Topic: "in", Partition: 0, Offset: 1, Key: []byte("k"), Value: []byte("v"), Timestamp: time.UnixMilli(1)}
	time.Sleep(10 * e.cfg.EpochInterval)
	require.Equal(t, int64(1), e.positions()[tp0], "a record was processed while the commit behind lagged")
	select {
	case err := <-ended:
		t.Fatalf("epoch 2 ended (%v) before epoch 1 committed", err)
	default:
	}

	fault.Remove()
	require.NoError(t, <-ended)
	waitedMu.Lock()
	require.GreaterOrEqual(t, waited, 10*e.cfg.EpochInterval, "the wait is not the commit_wait phase")
	waitedMu.Unlock()
	require.Eventually(t, func() bool { return e.positions()[tp0] == 2 }, 10*time.Second, time.Millisecond, "processing did not resume")
	require.NoError(t, settle(ctx, e))
	require.Equal(t, []int64{1}, c.marked(), "epoch 2 was cut before the held record")
	require.NoError(t, e.endEpoch(ctx, c, true))
	require.NoError(t, settle(ctx, e))
	require.Equal(t, []int64{1, 2}, c.marked())

	close(c.records)
	require.NoError(t, <-claimed)
}

// An at-least-once epoch of a stateful topology commits behind too: its
// cut freezes the state pending, and holds the changelog records while
// an output is refused; while its outputs wait for their acknowledgement
// the claims go on processing on top of it, queries do not see it, and
// its offset is committed only once they are acknowledged — then queries
// see its state. The epoch does not commit under the barrier, and the
// cut's wait for the outputs under the barrier is bounded (cutOutputsWait),
// however long the output is refused.
func TestAtLeastOnceStatefulEpochCommitsBehind(t *testing.T) {
	ctx := t.Context()
	e, b := countingEngine(t)
	require.True(t, e.rt.CanCommitBehind())
	query := func() (int64, bool) { return taskstest.Count(t, e.rt.(*tasks.Runtime), "counts", 0, "k") }

	c := &markingClaim{fakeClaim: fakeClaim{records: make(chan kafka.Record, 4)}}
	claimed := make(chan error, 1)
	go func() { claimed <- e.drv.Claim(ctx, c, e) }()
	send := func(off int64) { processed(t, e, c, off) }
	send(0) // the task is restored (its changelog marker acknowledged) before the fault
	// Every produce is refused as retriable: outputs and changelog
	// records wait in the producer's retries, and so does the epoch's
	// flush.
	fault := kfakehook.Cluster(b).Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.NotEnoughReplicas, Count: -1})
	send(1) // its output waits in the producer's retries: the epoch end must not wait for it

	endsAtOnce(t, e, c)
	send(2) // processed on top of epoch 1's pending state while its flush waits
	require.Empty(t, c.marked(), "an offset committed before its outputs were acknowledged")
	_, ok := query()
	require.False(t, ok, "a query saw the state of an epoch not committed")

	fault.Remove()
	require.NoError(t, settle(ctx, e))
	require.Equal(t, []int64{2}, c.marked())
	n, ok := query()
	require.True(t, ok, "the epoch's state is not visible once committed")
	require.EqualValues(t, 2, n)

	require.NoError(t, e.endEpoch(ctx, c, true))
	require.NoError(t, settle(ctx, e))
	require.Equal(t, []int64{2, 3}, c.marked(), "each epoch commits its offset, in order")
	n, _ = query()
	require.EqualValues(t, 3, n, "the third record counted on top of the first epoch's pending state")
	require.Equal(t, int64(2), e.Epochs())

	close(c.records)
	require.NoError(t, <-claimed)
}

// processed hands the claim c the record at offset off of in/0 and waits
// until it is processed.
func processed(t *testing.T, e *Engine, c *markingClaim, off int64) {
	t.Helper()
	c.records <- kafka.Record{Topic: "in", Partition: 0, Offset: off, Key: []byte("k"), Value: []byte("v"), Timestamp: time.UnixMilli(1)}
	require.Eventually(t, func() bool { return e.positions()[tp0] == off+1 }, 10*time.Second, time.Millisecond)
}

// endsAtOnce ends an epoch committed behind and fails if the end waits
// for the epoch's outputs to be acknowledged.
func endsAtOnce(t *testing.T, e *Engine, c *markingClaim) {
	t.Helper()
	ended := make(chan error, 1)
	go func() { ended <- e.endEpoch(t.Context(), c, true) }()
	select {
	case err := <-ended:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the epoch end waited for its outputs' acknowledgement: processing stood still")
	}
}

// The epoch log is appended behind the epoch's end; an append that fails
// stops the engine at the next epoch end — never dropped.
func TestEpochLogFailureSurfacesAtTheNextEpochEnd(t *testing.T) {
	ctx := t.Context()
	log, err := offsets.Open(t.TempDir(), offsets.Options{})
	require.NoError(t, err)
	wal, err := log.Namespace("behind")
	require.NoError(t, err)
	e, _ := behindEngine(t, wal)
	c := &markingClaim{fakeClaim: fakeClaim{records: make(chan kafka.Record, 4)}}
	claimed := make(chan error, 1)
	go func() { claimed <- e.drv.Claim(ctx, c, e) }()
	c.records <- kafka.Record{Topic: "in", Partition: 0, Offset: 0, Key: []byte("k"), Value: []byte("v"), Timestamp: time.UnixMilli(1)}
	require.Eventually(t, func() bool { return e.positions()[tp0] == 1 }, 10*time.Second, time.Millisecond)

	require.NoError(t, e.endEpoch(ctx, c, true))
	require.NoError(t, settle(ctx, e))
	require.Eventually(t, func() bool { // epoch 1 appended, behind
		last, ok, err := wal.LatestEpoch()
		return err == nil && ok && last.Epoch == 1
	}, 10*time.Second, time.Millisecond)

	require.NoError(t, log.Close()) // the next append fails
	c.records <- kafka.Record{Topic: "in", Partition: 0, Offset: 1, Key: []byte("k"), Value: []byte("v"), Timestamp: time.UnixMilli(1)}
	require.Eventually(t, func() bool { return e.positions()[tp0] == 2 }, 10*time.Second, time.Millisecond)
	require.NoError(t, e.endEpoch(ctx, c, true)) // committed; its append runs behind and fails
	require.Eventually(t, func() bool {
		err := e.endEpoch(ctx, c, true)
		if err != nil {
			require.ErrorContains(t, err, "continuous: epoch log")
		}
		return err != nil
	}, 10*time.Second, time.Millisecond, "a failed epoch log append was dropped")
	close(c.records)
	<-claimed
	_ = settle(ctx, e) // as Run does on its return, then
	require.Error(t, e.log.drain(), "Run's return reports it too")
}

// settle waits for what the last epoch end left running, as Run does on
// its return.
func settle(ctx context.Context, e *Engine) error {
	e.endMu.Lock()
	defer e.endMu.Unlock()
	_, err := e.settle(ctx, false)
	return err
}

var tp0 = offsets.TopicPartition{Topic: "in", Partition: 0}

// markingClaim records the offsets committed: those marked before each
// successful Commit.
type markingClaim struct {
	fakeClaim
	mu        sync.Mutex
	mark      int64
	committed []int64
}

func (c *markingClaim) MarkOffset(_ string, _ int32, next int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mark = next
}

func (c *markingClaim) Commit(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.committed); n == 0 || c.committed[n-1] != c.mark {
		c.committed = append(c.committed, c.mark)
	}
	return nil
}

func (c *markingClaim) marked() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int64(nil), c.committed...)
}
