package tests

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
)

// A third exactly-once instance joins and leaves two others again and
// again while they count words, and every transactional offset commit
// takes a while (kfake holds each TxnOffsetCommit 150 ms, as a loaded
// broker does): epochs are committing whenever a rebalance completes.
// The two instances that stay must never rewind because the group moved
// on (an epoch's TxnOffsetCommit refused with ILLEGAL_GENERATION: a
// commit that straddled the member's own rejoin) — each member finishes
// its epoch's commit before it rejoins, and commits nothing with a
// generation it is giving up — and a read_committed reader sees every
// word counted 1, 2, ..., n exactly once. On either client.
func TestExactlyOnceRebalanceDoesNotRewindKeptTasks(t *testing.T) {
	kafkatest.Long(t)
	for _, client := range []weir.KafkaClient{weir.KafkaClientFranzGo, weir.KafkaClientSarama} {
		t.Run(string(client), func(t *testing.T) { testRejoinKeepsEpochs(t, client) })
	}
}

func testRejoinKeepsEpochs(t *testing.T, client weir.KafkaClient) {
	env := kafkatest.Kfake(t, kafkatest.KfakeOptions())
	c := env.Cluster()
	slow := make(map[*kmsg.TxnOffsetCommitRequest]bool)
	c.ControlKey(int16(kmsg.TxnOffsetCommit), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.TxnOffsetCommitRequest)
		if !slow[r] { // a request slept once runs this again when it wakes
			slow[r] = true
			c.SleepControl(func() { time.Sleep(150 * time.Millisecond) })
		}
		delete(slow, r)
		return nil, nil, false
	})

	in, out := kafkatest.Topic(t), kafkatest.Topic(t)
	kafkatest.CreateTopic(t, env, in, 6)
	kafkatest.CreateTopic(t, env, out, 6)
	appID := kafkatest.GroupID(t)
	topo := wordCountTopology(t, in, out)
	vocab := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
	want := map[string]int64{}

	var moved, other atomic.Int64 // rewinds of the instances that stay
	stays := weir.WithErrorHandler(func(err error) {
		if errors.Is(err, tasks.ErrRewind) {
			if kafka.GroupMoved(err) {
				moved.Add(1)
			} else {
				other.Add(1)
			}
			t.Logf("rewind of an instance that stays: %v", err)
		}
	})
	opts := []weir.Option{weir.WithGuarantee(weir.ExactlyOnce), weir.WithKafkaClient(client)}
	a := startInstance(t, topo, env, appID, append(opts, stays)...)
	b := startInstance(t, topo, env, appID, append(opts, stays)...)
	defer func() {
		require.NoError(t, a.stop(t))
		require.NoError(t, b.stop(t))
	}()
	produceLines(t, env, in, 0, 100, vocab, want)
	waitForCounts(t, env, out, want)
	moved.Store(0) // the two instances' own start (the second one's join)
	other.Store(0)

	const rounds = 3
	next := 100
	for range rounds {
		third := startInstance(t, topo, env, appID, opts...)
		for range 10 {
			produceLines(t, env, in, next, 20, vocab, want)
			next += 20
			time.Sleep(200 * time.Millisecond)
		}
		waitForCounts(t, env, out, want)
		require.NoError(t, third.stop(t))
		for range 5 {
			produceLines(t, env, in, next, 20, vocab, want)
			next += 20
			time.Sleep(200 * time.Millisecond)
		}
		waitForCounts(t, env, out, want)
	}
	seen := waitForCounts(t, env, out, want)
	requireExact(t, want, seen)
	require.Zero(t, moved.Load(), "the instances that stay rewound because a commit straddled a generation change")
	require.Zero(t, other.Load(), "the instances that stay rewound")
}
