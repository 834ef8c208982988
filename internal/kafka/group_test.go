package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/third_party/kfake"
)

const waitFor = 30 * time.Second

// eachClient runs fn on each client weir runs on, as subtests named after
// the client (through kafka.ClientEnv), on each broker kafkatest.Run
// offers.
func eachClient[F func(*testing.T) | func(*testing.T, *kafkatest.Env)](t *testing.T, fn F) {
	for _, c := range []kafka.Client{kafka.ClientSarama, kafka.ClientFranz} {
		t.Run(string(c), func(t *testing.T) {
			t.Setenv(kafka.ClientEnv, string(c))
			switch fn := any(fn).(type) {
			case func(*testing.T):
				fn(t)
			case func(*testing.T, *kafkatest.Env):
				kafkatest.Run(t, fn)
			}
		})
	}
}

// clientOf is the client the test runs on.
func clientOf(t *testing.T) kafka.Client {
	c, err := kafka.ResolveClient("")
	require.NoError(t, err)
	return c
}

// requireKafkaError requires err to carry Kafka's error want, as either
// client reports it (a sarama.KError or a *kerr.Error).
func requireKafkaError(t *testing.T, err error, want *kerr.Error) {
	t.Helper()
	var ke *kerr.Error
	var se sarama.KError
	switch {
	case errors.As(err, &ke):
		require.Equal(t, want.Code, ke.Code, "%v", err)
	case errors.As(err, &se):
		require.Equal(t, want.Code, int16(se), "%v", err)
	default:
		t.Fatalf("%v: not a Kafka error, want %v", err, want)
	}
}

// groupConfig returns a member configuration with test-sized timeouts
// (Kafka's group.min.session.timeout.ms is 6 s by default).
func groupConfig(env *kafkatest.Env, group string, topics ...string) kafka.GroupConfig {
	return kafka.GroupConfig{
		Config:            env.Config(),
		GroupID:           group,
		Topics:            topics,
		SessionTimeout:    6 * time.Second,
		HeartbeatInterval: 500 * time.Millisecond,
		RebalanceTimeout:  10 * time.Second,
	}
}

// member runs a Group until the returned stop function is called; stop
// returns Run's result.
func member(t *testing.T, cfg kafka.GroupConfig, h kafka.Handler) (stop func() error) {
	t.Helper()
	g, err := kafka.NewGroup(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx, h) }()
	var once sync.Once
	var result error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case result = <-done:
			case <-time.After(waitFor):
				result = errors.New("Run did not return")
			}
		})
		return result
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// tracker records which member holds which partition, and fails on any
// moment where two members hold the same one.
type tracker struct {
	mu         sync.Mutex
	holder     map[string]string // "topic/partition" -> member
	violations []string
}

func newTracker() *tracker { return &tracker{holder: map[string]string{}} }

func (tr *tracker) handler(name string) kafka.Handler {
	return kafka.HandlerFunc(func(ctx context.Context, c kafka.Claim) error {
		key := fmt.Sprintf("%s/%d", c.Topic(), c.Partition())
		tr.mu.Lock()
		if other, ok := tr.holder[key]; ok {
			tr.violations = append(tr.violations, fmt.Sprintf("%s claimed by %s while %s holds it", key, name, other))
		}
		tr.holder[key] = name
		tr.mu.Unlock()
		defer func() {
			tr.mu.Lock()
			if tr.holder[key] == name {
				delete(tr.holder, key)
			}
			tr.mu.Unlock()
		}()
		for range c.Records() {
		}
		return nil
	})
}

// of returns member -> sorted "topic/partition" keys.
func (tr *tracker) of() map[string][]string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := map[string][]string{}
	for _, k := range slices.Sorted(maps.Keys(tr.holder)) {
		out[tr.holder[k]] = append(out[tr.holder[k]], k)
	}
	return out
}

func (tr *tracker) requireSafe(t *testing.T) {
	t.Helper()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	require.Empty(t, tr.violations)
}

func TestGroupCoPartitionedAssignmentAndHandover(t *testing.T) {
	eachClient(t, func(t *testing.T, env *kafkatest.Env) {
		a, b := kafkatest.Topic(t)+"-a", kafkatest.Topic(t)+"-b"
		kafkatest.CreateTopic(t, env, a, 4)
		kafkatest.CreateTopic(t, env, b, 4)
		cfg := groupConfig(env, kafkatest.GroupID(t), a, b)
		cfg.CoPartitioned = [][]string{{a, b}}
		tr := newTracker()

		stop1 := member(t, cfg, tr.handler("m1"))
		require.Eventually(t, func() bool { return len(tr.of()["m1"]) == 8 }, waitFor, 20*time.Millisecond)
		stop2 := member(t, cfg, tr.handler("m2"))

		// Balanced and co-partitioned: each member holds p of a iff p of b.
		require.Eventually(t, func() bool {
			held := tr.of()
			return len(held["m1"]) == 4 && len(held["m2"]) == 4
		}, waitFor, 20*time.Millisecond, "assignment %v", tr.of())
		for _, keys := range tr.of() {
			for p := range 4 {
				require.Equal(t, slices.Contains(keys, fmt.Sprintf("%s/%d", a, p)),
					slices.Contains(keys, fmt.Sprintf("%s/%d", b, p)), "partition %d split: %v", p, tr.of())
			}
		}

		// m2 leaves: m1 takes everything back.
		require.NoError(t, stop2())
		require.Eventually(t, func() bool { return len(tr.of()["m1"]) == 8 }, waitFor, 20*time.Millisecond)
		require.NoError(t, stop1())

		require.Empty(t, tr.of(), "every claim returned before Run")
		tr.requireSafe(t)
	})
}

func TestGroupCommitsAreVisible(t *testing.T) {
	eachClient(t, func(t *testing.T, env *kafkatest.Env) {
		topic := kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, topic, 2)
		var recs []kafka.Record
		for i := range 10 {
			recs = append(recs, kafka.Record{Topic: topic, Partition: int32(i % 2), Value: fmt.Appendf(nil, "%d", i)})
		}
		kafkatest.Produce(t, env, recs...)
		group := kafkatest.GroupID(t)

		var mu sync.Mutex
		seen := map[int32]int{}
		initial := map[int32]int64{}
		var commitErr error
		handler := kafka.HandlerFunc(func(ctx context.Context, c kafka.Claim) error {
			mu.Lock()
			initial[c.Partition()] = c.InitialOffset()
			mu.Unlock()
			require.NotEmpty(t, c.MemberID())
			require.Positive(t, c.GenerationID())
			md := c.GroupMetadata()
			require.Equal(t, group, md.GroupID)
			_, ok := kafka.SaramaSession(c)
			require.Equal(t, clientOf(t) == kafka.ClientSarama, ok, "a sarama session behind sarama claims only")
			for r := range c.Records() {
				c.MarkOffset(r.Topic, r.Partition, r.Offset+1)
				mu.Lock()
				seen[r.Partition]++
				if seen[r.Partition] == 5 {
					if err := c.Commit(ctx); err != nil {
						commitErr = err
					}
				}
				mu.Unlock()
			}
			return c.Commit(ctx)
		})
		stop := member(t, groupConfig(env, group, topic), handler)
		admin, err := kafka.NewAdmin(env.Config())
		require.NoError(t, err)
		defer admin.Close()
		require.Eventually(t, func() bool {
			got, err := admin.CommittedOffsets(t.Context(), group, topic, nil)
			return err == nil && got[0] == 5 && got[1] == 5
		}, waitFor, 20*time.Millisecond)
		require.NoError(t, stop())
		require.NoError(t, commitErr)
		require.Equal(t, map[int32]int64{0: 0, 1: 0}, initial, "no commit yet: log start")

		// A new member of the group starts where the first one committed.
		clear(initial)
		stop = member(t, groupConfig(env, group, topic), kafka.HandlerFunc(func(ctx context.Context, c kafka.Claim) error {
			mu.Lock()
			initial[c.Partition()] = c.InitialOffset()
			mu.Unlock()
			for range c.Records() {
			}
			return nil
		}))
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(initial) == 2
		}, waitFor, 20*time.Millisecond)
		require.NoError(t, stop())
		require.Equal(t, map[int32]int64{0: 5, 1: 5}, initial)
	})
}

func TestGroupHandlerErrorStopsRun(t *testing.T) {
	eachClient(t, func(t *testing.T, env *kafkatest.Env) {
		topic := kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, topic, 1)
		kafkatest.Produce(t, env, kafka.Record{Topic: topic, Partition: 0, Value: []byte("poison")})
		boom := errors.New("boom")
		g, err := kafka.NewGroup(groupConfig(env, kafkatest.GroupID(t), topic))
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), waitFor)
		defer cancel()
		err = g.Run(ctx, kafka.HandlerFunc(func(ctx context.Context, c kafka.Claim) error {
			for range c.Records() {
				return boom
			}
			return nil
		}))
		require.ErrorIs(t, err, boom)
		var pe *kafka.PartitionError
		require.ErrorAs(t, err, &pe)
		require.Equal(t, topic, pe.Topic)
		require.NoError(t, ctx.Err(), "stopped by the error, not the timeout")
	})
}

func TestGroupRejectsBadTopics(t *testing.T) {
	kafkatest.Long(t)
	eachClient(t, func(t *testing.T, env *kafkatest.Env) {
		a, b := kafkatest.Topic(t)+"-a", kafkatest.Topic(t)+"-b"
		kafkatest.CreateTopic(t, env, a, 2)
		kafkatest.CreateTopic(t, env, b, 3)
		cfg := groupConfig(env, kafkatest.GroupID(t), a, b)
		cfg.CoPartitioned = [][]string{{a, b}}
		g, err := kafka.NewGroup(cfg)
		require.NoError(t, err)
		nop := kafka.HandlerFunc(func(context.Context, kafka.Claim) error { return nil })
		err = g.Run(t.Context(), nop)
		require.ErrorIs(t, err, kafka.ErrPartitionMismatch)
		require.ErrorContains(t, err, "(2 partitions)")

		g, err = kafka.NewGroup(groupConfig(env, kafkatest.GroupID(t), a+"-missing"))
		require.NoError(t, err)
		require.ErrorIs(t, g.Run(t.Context(), nop), kafka.ErrUnknownTopic)
	})
}

func TestGroupSurfacesFetchErrors(t *testing.T) {
	eachClient(t, testGroupSurfacesFetchErrors)
}

func testGroupSurfacesFetchErrors(t *testing.T) {
	env := kafkatest.Kfake(t, embeddedDefaults)
	topic := kafkatest.Topic(t)
	kafkatest.CreateTopic(t, env, topic, 1)
	kafkatest.Produce(t, env, kafka.Record{Topic: topic, Partition: 0, Value: []byte("x")})

	h := env.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: topic, Err: kerr.CorruptMessage, Count: 1})
	errs := make(chan error, 16)
	cfg := groupConfig(env, kafkatest.GroupID(t), topic)
	cfg.OnError = func(err error) { errs <- err }
	got := make(chan kafka.Record, 1)
	stop := member(t, cfg, kafka.HandlerFunc(func(ctx context.Context, c kafka.Claim) error {
		for r := range c.Records() {
			got <- r
		}
		return nil
	}))
	select {
	case err := <-errs:
		var pe *kafka.PartitionError
		require.ErrorAs(t, err, &pe)
		require.Equal(t, topic, pe.Topic)
		requireKafkaError(t, err, kerr.CorruptMessage)
	case <-time.After(waitFor):
		t.Fatal("fetch error not surfaced")
	}
	select {
	case r := <-got:
		require.Equal(t, "x", string(r.Value), "consumption goes on after the error")
	case <-time.After(waitFor):
		t.Fatal("no record after the fault")
	}
	require.Equal(t, 1, h.Hits())
	require.NoError(t, stop())
}

func TestGroupCommitErrors(t *testing.T) {
	eachClient(t, testGroupCommitErrors)
}

func testGroupCommitErrors(t *testing.T) {
	env := kafkatest.Kfake(t, embeddedDefaults)
	topic := kafkatest.Topic(t)
	kafkatest.CreateTopic(t, env, topic, 1)
	kafkatest.Produce(t, env, kafka.Record{Topic: topic, Partition: 0, Value: []byte("x")})
	group := kafkatest.GroupID(t)

	results := make(chan error, 3)
	stop := member(t, groupConfig(env, group, topic), kafka.HandlerFunc(func(ctx context.Context, c kafka.Claim) error {
		for r := range c.Records() {
			c.MarkOffset(r.Topic, r.Partition, r.Offset+1)
			// Transient: REBALANCE_IN_PROGRESS twice, then accepted.
			retried := env.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Group: group, Err: kerr.RebalanceInProgress, Count: 2})
			results <- c.Commit(ctx)
			retried.Remove()
			// Terminal: returned to the caller, as a *PartitionError.
			c.MarkOffset(r.Topic, r.Partition, r.Offset+2)
			env.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Group: group, Err: kerr.OffsetMetadataTooLarge, Count: 1})
			results <- c.Commit(ctx)
			// Marks of other partitions are ignored; nothing left to commit.
			c.MarkOffset(r.Topic, 7, 100)
			c.MarkOffset(r.Topic, r.Partition, 1) // lower than marked: ignored
			results <- nil
		}
		return nil
	}))
	require.NoError(t, <-results)
	err := <-results
	var pe *kafka.PartitionError
	require.ErrorAs(t, err, &pe)
	requireKafkaError(t, err, kerr.OffsetMetadataTooLarge)
	require.NoError(t, <-results)
	require.NoError(t, stop())
}

func TestGroupConfigValidate(t *testing.T) {
	base := kafka.GroupConfig{Config: kafka.Config{Brokers: []string{"x:1"}}, GroupID: "g", Topics: []string{"a", "b"}}
	require.NoError(t, base.Validate())
	for name, mutate := range map[string]func(*kafka.GroupConfig){
		"no group":        func(c *kafka.GroupConfig) { c.GroupID = "" },
		"no topics":       func(c *kafka.GroupConfig) { c.Topics = nil },
		"no brokers":      func(c *kafka.GroupConfig) { c.Brokers = nil },
		"heartbeat":       func(c *kafka.GroupConfig) { c.HeartbeatInterval = time.Minute },
		"negative":        func(c *kafka.GroupConfig) { c.RebalanceTimeout = -1 },
		"unknown in set":  func(c *kafka.GroupConfig) { c.CoPartitioned = [][]string{{"a", "c"}} },
		"in two sets":     func(c *kafka.GroupConfig) { c.CoPartitioned = [][]string{{"a", "b"}, {"a"}} },
		"bad sasl":        func(c *kafka.GroupConfig) { c.SASL = &kafka.SASL{Mechanism: "PLAIN"} },
		"unknown sasl":    func(c *kafka.GroupConfig) { c.SASL = &kafka.SASL{Mechanism: "OAUTHBEARER", User: "u", Password: "p"} },
		"blank broker":    func(c *kafka.GroupConfig) { c.Brokers = []string{" "} },
		"empty sasl user": func(c *kafka.GroupConfig) { c.SASL = &kafka.SASL{Mechanism: "PLAIN", Password: "p"} },
	} {
		c := base
		mutate(&c)
		require.ErrorIs(t, c.Validate(), kafka.ErrConfig, name)
		_, err := kafka.NewGroup(c)
		require.ErrorIs(t, err, kafka.ErrConfig, name)
	}
	g, err := kafka.NewGroup(base)
	require.NoError(t, err)
	require.ErrorIs(t, g.Run(t.Context(), nil), kafka.ErrConfig)
}

// TestGroupStaticMemberRestart stops a static member (which does not leave
// the group) and starts it again within the session timeout: it gets its
// partitions back, and the other member keeps its own claims running
// throughout (cooperative protocol: no revocation).
func TestGroupStaticMemberRestart(t *testing.T) {
	eachClient(t, func(t *testing.T, env *kafkatest.Env) {
		topic := kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, topic, 4)
		group := kafkatest.GroupID(t)
		tr := newTracker()
		var mu sync.Mutex
		starts := map[string]int{}
		counting := func(name string) kafka.Handler {
			inner := tr.handler(name)
			return kafka.HandlerFunc(func(ctx context.Context, c kafka.Claim) error {
				mu.Lock()
				starts[name]++
				mu.Unlock()
				return inner.Claim(ctx, c)
			})
		}
		static := func(id string) kafka.GroupConfig {
			cfg := groupConfig(env, group, topic)
			cfg.InstanceID = id
			return cfg
		}
		balanced := func() bool {
			held := tr.of()
			return len(held["m1"]) == 2 && len(held["m2"]) == 2
		}

		member(t, static("m1"), counting("m1"))
		require.Eventually(t, func() bool { return len(tr.of()["m1"]) == 4 }, waitFor, 20*time.Millisecond)
		stop2 := member(t, static("m2"), counting("m2"))
		require.Eventually(t, balanced, waitFor, 20*time.Millisecond, "%v", tr.of())
		before := tr.of()
		mu.Lock()
		m1Starts := starts["m1"]
		mu.Unlock()

		require.NoError(t, stop2())
		require.Len(t, tr.of()["m1"], 2, "m2's partitions wait for it: no rebalance on a static stop")
		member(t, static("m2"), counting("m2"))
		require.Eventually(t, balanced, waitFor, 20*time.Millisecond, "%v", tr.of())
		require.Equal(t, before, tr.of())
		mu.Lock()
		require.Equal(t, m1Starts, starts["m1"], "m1's claims never stopped")
		mu.Unlock()
		tr.requireSafe(t)
	})
}

// A stop while the member waits in JoinGroup returns at once instead of
// waiting for the join's answer, which can take the whole rebalance
// timeout. The broker holds the join here until the test ends; the
// member's read timeout (rebalance timeout + 5 s) is longer than the
// test's wait for Run to return.
func TestStopWhileJoiningDoesNotWaitForTheRebalance(t *testing.T) {
	eachClient(t, func(t *testing.T, env *kafkatest.Env) {
		env.RequireKfake(t)
		topic, group := kafkatest.Topic(t), kafkatest.GroupID(t)
		kafkatest.CreateTopic(t, env, topic, 1)
		c := env.Cluster()
		release, held := make(chan struct{}), make(chan struct{}, 1)
		t.Cleanup(func() { close(release) })
		c.ControlKey(int16(kmsg.JoinGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
			if r, ok := req.(*kmsg.JoinGroupRequest); ok && r.Group == group {
				select {
				case held <- struct{}{}:
				default:
				}
				c.SleepControl(func() { <-release })
			}
			return nil, nil, false
		})
		cfg := groupConfig(env, group, topic)
		cfg.RebalanceTimeout = time.Minute
		stop := member(t, cfg, kafka.HandlerFunc(func(ctx context.Context, c kafka.Claim) error {
			for range c.Records() {
			}
			return nil
		}))
		select {
		case <-held:
		case <-time.After(waitFor):
			t.Fatal("the member never sent JoinGroup")
		}
		require.NoError(t, stop(), "Run returns while its JoinGroup is unanswered")
	})
}
