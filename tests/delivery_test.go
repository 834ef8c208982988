package tests

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/third_party/kfake"
	"github.com/weirstream/weir/microbatch"
)

// An at-least-once output the producer gives back undelivered, for a
// cause that heals, rewinds the epoch instead of stopping the
// application. Here the connection to the output's leader breaks with a
// request in flight and, for a while, no leader is known — as when a
// broker dies and the controller elects another: sarama then fails the
// records at once, however many retries they have left, and Run must
// not return "runtime: flush outputs: … EOF" ("broker not connected" on a
// three-broker cluster). Under at-least-once the counts may then count a
// word twice, never less.
func TestUndeliveredOutputRewinds(t *testing.T) {
	kafkatest.Long(t)
	inBothModes(t, testUndeliveredOutputRewinds)
}

func testUndeliveredOutputRewinds(t *testing.T, env *kafkatest.Env, in, out string, opts []weir.Option) {
	vocab := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta"}
	want := map[string]int64{}
	produceLines(t, env, in, 0, 300, vocab, want)

	// The first Produce request carrying an output loses its connection,
	// and for the next 3 s the output topic has no leader.
	c := env.Cluster()
	var leaderless, broken atomic.Bool
	noLeader := c.Fault(kfake.Fault{
		Keys: []kmsg.Key{kmsg.Metadata}, Topic: out, Err: kerr.LeaderNotAvailable, Count: -1,
		When: func(kmsg.Request) bool { return leaderless.Load() },
	})
	defer noLeader.Remove()
	outID := topicID(t, env, out)
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !writesTo(req.(*kmsg.ProduceRequest), out, outID) || !broken.CompareAndSwap(false, true) {
			return nil, nil, false
		}
		leaderless.Store(true)
		time.AfterFunc(3*time.Second, func() { leaderless.Store(false) })
		return nil, errors.New("test: the output's leader died"), true
	})

	inst := startInstance(t, wordCountTopology(t, in, out), env, kafkatest.GroupID(t), opts...)
	require.Eventually(t, broken.Load, 30*time.Second, 10*time.Millisecond, "no output was produced")
	time.Sleep(4 * time.Second) // the outage, and sarama giving the records up
	select {
	case err := <-inst.done:
		t.Fatalf("Run ended when an output was not delivered: %v", err)
	default:
	}
	produceLines(t, env, in, 300, 300, vocab, want)
	waitForCountsAtLeast(t, env, out, want)
	require.NoError(t, inst.stop(t))
}

// inBothModes runs test on kfake in each engine, at-least-once, with an
// input and an output topic of 4 partitions each.
func inBothModes(t *testing.T, test func(t *testing.T, env *kafkatest.Env, in, out string, opts []weir.Option)) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		env.RequireKfake(t)
		for _, mode := range []string{"continuous", "micro-batch"} {
			t.Run(mode, func(t *testing.T) {
				in, out := kafkatest.Topic(t), kafkatest.Topic(t)
				kafkatest.CreateTopic(t, env, in, 4)
				kafkatest.CreateTopic(t, env, out, 4)
				opts := []weir.Option{weir.WithGuarantee(weir.AtLeastOnce)}
				if mode == "micro-batch" {
					opts = append(opts, weir.WithMicroBatch(microbatch.Config{MaxRecordsPerBatch: 50}))
				}
				test(t, env, in, out, opts)
			})
		}
	})
}

// writesTo reports whether a Produce request carries records for topic,
// named or (Produce v13, franz-go's) by its id.
func writesTo(req *kmsg.ProduceRequest, topic string, id [16]byte) bool {
	for _, tp := range req.Topics {
		if tp.Topic == topic || tp.TopicID == id && id != [16]byte{} {
			return true
		}
	}
	return false
}

// topicID returns the id of topic.
func topicID(t *testing.T, env *kafkatest.Env, topic string) [16]byte {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...))
	require.NoError(t, err)
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(t.Context(), cl)
	require.NoError(t, err)
	require.Len(t, resp.Topics, 1)
	return resp.Topics[0].TopicID
}

// A graceful stop while outputs wait in the producer's retries (their
// partition's leader refuses them) ends Run without an error, within the
// continuous engine's last-epoch timeout: they are outputs of work whose
// offsets were never committed, which the next start processes again.
// Run must not return "kafka: close producer: … message received by
// producer in process of shutting down" (a member stopped during a broker
// outage would exit with status 1), nor, in continuous mode, the last
// epoch's "context deadline exceeded" after 67 s.
func TestStopWhileOutputsRetryIsGraceful(t *testing.T) {
	kafkatest.Long(t)
	inBothModes(t, testStopWhileOutputsRetry)
}

func testStopWhileOutputsRetry(t *testing.T, env *kafkatest.Env, in, out string, opts []weir.Option) {
	produceLines(t, env, in, 0, 200, []string{"alpha", "beta", "gamma"}, map[string]int64{})
	refused := env.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: out, Err: kerr.NotLeaderForPartition, Count: -1})
	defer refused.Remove()
	inst := startInstance(t, wordCountTopology(t, in, out), env, kafkatest.GroupID(t), opts...)
	require.Eventually(t, func() bool { return refused.Hits() >= 3 }, 30*time.Second, 10*time.Millisecond,
		"the outputs were not refused")
	// Continuous mode waits out its last epoch's 30 s timeout (about 38 s
	// in all under the race detector on an idle machine); the bound leaves
	// room for a loaded one.
	require.NoError(t, inst.stopWithin(t, 2*time.Minute))
}
