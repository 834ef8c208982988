package tests

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
)

// An output topic deleted while the application runs stops Run, under
// both guarantees, within seconds, with an error naming the topic and
// saying it does not exist — not the producer's "circuit breaker is open",
// and, under exactly-once, not an endless loop of aborted epochs (issue
// 23).
func TestDeletedSinkTopicStopsRun(t *testing.T) {
	kafkatest.Long(t)
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		for _, g := range []weir.Guarantee{weir.AtLeastOnce, weir.ExactlyOnce} {
			t.Run(g.String(), func(t *testing.T) {
				skipSaramaRace(t, g)
				in, out := kafkatest.Topic(t), kafkatest.Topic(t)
				kafkatest.CreateTopic(t, env, in, 2)
				kafkatest.CreateTopic(t, env, out, 2)
				var errs errorLog
				inst := startInstance(t, wordCountTopology(t, in, out), env, kafkatest.GroupID(t),
					weir.WithGuarantee(g), weir.WithErrorHandler(errs.add), weir.WithHTTP("127.0.0.1:0"))
				want := map[string]int64{}
				produceLines(t, env, in, 0, 20, []string{"a", "b", "c"}, want)
				waitForCounts(t, env, out, want)
				// /healthz turns 503 as soon as the error is known, while
				// Run winds down.
				addr := inst.app.HTTPAddr()
				require.NotEmpty(t, addr)
				var unhealthy atomic.Bool
				var poller sync.WaitGroup
				stopPolling := make(chan struct{})
				poller.Go(func() {
					for {
						select {
						case <-stopPolling:
							return
						case <-time.After(5 * time.Millisecond):
						}
						resp, err := http.Get("http://" + addr + "/healthz")
						if err != nil {
							continue
						}
						_ = resp.Body.Close()
						if resp.StatusCode == http.StatusServiceUnavailable {
							unhealthy.Store(true)
						}
					}
				})
				defer func() { close(stopPolling); poller.Wait() }()

				deleteTopicNow(t, env, out)
				produceLines(t, env, in, 20, 20, []string{"a", "b", "c"}, want)
				var err error
				start := time.Now()
				select {
				case err = <-inst.done:
				case <-time.After(45 * time.Second):
					inst.cancel()
					<-inst.done
					t.Fatalf("Run did not return within 45s after the output topic was deleted; errors handled: %v", errs.all())
				}
				took := time.Since(start)
				require.Error(t, err)
				msg := err.Error()
				t.Logf("Run returned after %v: %v", took.Round(time.Millisecond), err)
				require.ErrorIs(t, err, kafka.ErrUnknownTopic)
				require.True(t, strings.Contains(msg, `"`+out+`"`), msg)
				require.True(t, strings.Contains(msg, "does not exist"), msg)
				require.False(t, strings.Contains(msg, "circuit breaker"), msg)
				st := inst.app.State()
				require.Equal(t, weir.Failed, st.State)
				require.ErrorIs(t, st.Err, kafka.ErrUnknownTopic)
				require.True(t, unhealthy.Load(), "/healthz never answered 503 while the failed App wound down")
			})
		}
	})
}

// errorLog keeps the errors an App survived.
type errorLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *errorLog) add(err error) {
	l.mu.Lock()
	l.errs = append(l.errs, err)
	l.mu.Unlock()
}

func (l *errorLog) all() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.errs...)
}

// deleteTopicNow deletes a topic and waits until the broker no longer
// lists it.
func deleteTopicNow(t *testing.T, env *kafkatest.Env, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TopicNames = []string{topic}
	rt := kmsg.NewDeleteTopicsRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Zero(t, resp.Topics[0].ErrorCode, "delete %s", topic)
	require.Eventually(t, func() bool {
		m := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(topic)
		m.Topics = append(m.Topics, mt)
		r, err := m.RequestWith(ctx, cl)
		return err == nil && len(r.Topics) == 1 && r.Topics[0].ErrorCode != 0
	}, 20*time.Second, 50*time.Millisecond, "topic %s still listed", topic)
}

// A record larger than the output topic's max.message.bytes (below weir's
// own 1 MiB limit, so the broker is the one to refuse it) stops Run under
// both guarantees with an error naming the topic and the Kafka error,
// instead of retrying a record no retry delivers.
func TestRecordTheTopicRejectsStopsRun(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		for _, g := range []weir.Guarantee{weir.AtLeastOnce, weir.ExactlyOnce} {
			t.Run(g.String(), func(t *testing.T) {
				skipSaramaRace(t, g)
				in, out := kafkatest.Topic(t), kafkatest.Topic(t)
				kafkatest.CreateTopic(t, env, in, 2)
				kafkatest.CreateTopic(t, env, out, 2, map[string]string{"max.message.bytes": "2000"})
				inst := startInstance(t, wordCountTopology(t, in, out), env, kafkatest.GroupID(t), weir.WithGuarantee(g))
				want := map[string]int64{}
				produceLines(t, env, in, 0, 10, []string{"a", "b"}, want)
				waitForCounts(t, env, out, want)
				// A 5,000-byte word: its count's key is over the topic's limit.
				produceLines(t, env, in, 10, 1, []string{strings.Repeat("w", 5000)}, map[string]int64{})
				var err error
				start := time.Now()
				select {
				case err = <-inst.done:
				case <-time.After(60 * time.Second):
					inst.cancel()
					<-inst.done
					t.Fatal("Run did not return within 60s of a record the topic rejects")
				}
				t.Logf("Run returned after %v: %v", time.Since(start).Round(time.Millisecond), err)
				require.ErrorIs(t, err, tasks.ErrOutputFatal)
				require.True(t, strings.Contains(err.Error(), `topic "`+out+`" rejects a record`), err.Error())
				require.False(t, strings.Contains(err.Error(), "circuit breaker"), err.Error())
			})
		}
	})
}

// skipSaramaRace skips an exactly-once case whose transactional batches
// fail: under -race they trip a data race inside sarama v1.61.1
// (transactionManager.transitionTo vs publishTxnPartitions), as in
// TestExactlyOnceSurvivesFailedTransactions; CI runs them without -race.
func skipSaramaRace(t *testing.T, g weir.Guarantee) {
	if raceEnabled && g == weir.ExactlyOnce {
		t.Skip("sarama v1.61.1 has a data race on failed transactional batches")
	}
}
