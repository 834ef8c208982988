package epochs

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/embedded"
	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest/kfakehook"
	"github.com/weirstream/weir/internal/third_party/kfake"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

// A revoked claim that cannot end its epoch within the rebalance timeout —
// its outputs wait out a broker's outage — has its context cancelled by
// the group. That rewinds the epoch and lets the member rejoin; it does
// not stop the application: Run does not return "output not sent: …
// context canceled" or "flush: context canceled".
func TestClaimCutOffByTheGroupRewinds(t *testing.T) {
	ctx := t.Context()
	b, err := embedded.Start(ctx, embedded.Options{Topics: map[string]int32{"in": 1, "out": 1}})
	require.NoError(t, err)
	defer b.Close()
	bld := topology.NewBuilder()
	topology.NewStream(bld, "in", serde.String(), serde.String()).To("out")
	topo, err := bld.Build()
	require.NoError(t, err)
	rt, err := tasks.New(tasks.Config{
		ApplicationID: "cutoff", Graph: topo.Graph(), Kafka: kafka.Config{Brokers: b.Addrs()},
		Logger: slog.New(slog.DiscardHandler), Clock: time.Now, StateDir: t.TempDir(),
	})
	require.NoError(t, err)
	require.NoError(t, rt.Prepare(ctx))
	defer rt.Close()
	var reported []error
	e, err := New(rt, Config{EpochInterval: time.Hour, OnError: func(err error) { reported = append(reported, err) }})
	require.NoError(t, err)

	// Every produce is refused as retriable: the output waits in the
	// producer's retries, and so does the epoch's flush.
	kfakehook.Cluster(b).Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.NotEnoughReplicas, Count: -1})

	c := &fakeClaim{records: make(chan kafka.Record, 1)}
	c.records <- kafka.Record{Topic: "in", Partition: 0, Offset: 0, Key: []byte("k"), Value: []byte("v"), Timestamp: time.UnixMilli(1)}
	close(c.records) // revoked: the claim ends its epoch, whose flush waits
	claimCtx, cutOff := context.WithCancel(ctx)
	session := e.rewindSignal()
	done := make(chan error, 1)
	go func() { done <- e.drv.Claim(claimCtx, c, e) }()
	time.Sleep(500 * time.Millisecond) // the flush is waiting
	cutOff()                           // what the group does after the rebalance timeout
	select {
	case err := <-done:
		require.NoError(t, err, "a claim cut off by the group must rewind, not fail the application")
	case <-time.After(20 * time.Second):
		t.Fatal("the cut-off claim did not return")
	}
	select {
	case <-session:
	default:
		t.Fatal("the cut-off claim did not rewind the session")
	}
	require.Empty(t, e.positions(), "a rewind forgets the positions")
	require.NotEmpty(t, reported, "the rewind is reported")
	require.ErrorIs(t, reported[len(reported)-1], tasks.ErrRewind)
}

// fakeClaim is a claim of in/0 whose records the test supplies.
type fakeClaim struct{ records chan kafka.Record }

func (c *fakeClaim) Topic() string                   { return "in" }
func (c *fakeClaim) Partition() int32                { return 0 }
func (c *fakeClaim) InitialOffset() int64            { return 0 }
func (c *fakeClaim) HighWaterMarkOffset() int64      { return 1 }
func (c *fakeClaim) Records() <-chan kafka.Record    { return c.records }
func (c *fakeClaim) MarkOffset(string, int32, int64) {}
func (c *fakeClaim) Commit(context.Context) error    { return nil }
func (c *fakeClaim) GenerationID() int32             { return 1 }
func (c *fakeClaim) MemberID() string                { return "m" }
func (c *fakeClaim) GroupMetadata() kafka.GroupMetadata {
	return kafka.GroupMetadata{GroupID: "cutoff"}
}
