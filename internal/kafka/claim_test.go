package kafka_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
)

// A claim that does not read holds back its own partition only: the other
// partition's records keep flowing, and once the slow claim reads, it gets
// every record of its partition in order, once (the partition was paused
// and resumed, never skipped).
func TestSlowClaimHoldsBackItsPartitionOnly(t *testing.T) {
	eachClient(t, func(t *testing.T, env *kafkatest.Env) {
		topic := kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, topic, 2)
		const slowN, fastN = 3000, 20
		var recs []kafka.Record
		for i := range slowN {
			recs = append(recs, kafka.Record{Topic: topic, Partition: 0, Value: fmt.Appendf(nil, "%d", i)})
		}
		kafkatest.Produce(t, env, recs...)

		release := make(chan struct{})
		fast := make(chan kafka.Record, fastN)
		slow := make(chan []int64, 1)
		member(t, groupConfig(env, kafkatest.GroupID(t), topic), kafka.HandlerFunc(func(ctx context.Context, c kafka.Claim) error {
			if c.Partition() == 1 {
				for r := range c.Records() {
					fast <- r
				}
				return nil
			}
			select {
			case <-release:
			case <-ctx.Done():
				return nil
			}
			var offs []int64
			for r := range c.Records() {
				offs = append(offs, r.Offset)
				if len(offs) == 2*slowN {
					slow <- offs
				}
			}
			return nil
		}))

		// Partition 0 has filled its claim's buffer by now; partition 1's
		// records still arrive.
		time.Sleep(500 * time.Millisecond)
		recs = recs[:0]
		for i := range fastN {
			recs = append(recs, kafka.Record{Topic: topic, Partition: 1, Value: fmt.Appendf(nil, "%d", i)})
		}
		kafkatest.Produce(t, env, recs...)
		for i := range fastN {
			select {
			case r := <-fast:
				require.Equal(t, int64(i), r.Offset)
			case <-time.After(waitFor):
				t.Fatalf("partition 1 got %d of %d records while partition 0's claim did not read", i, fastN)
			}
		}

		// More for partition 0 while its claim holds it back: fetched
		// once the claim reads (kgo resumes the paused partition).
		recs = recs[:0]
		for i := range slowN {
			recs = append(recs, kafka.Record{Topic: topic, Partition: 0, Value: fmt.Appendf(nil, "%d", slowN+i)})
		}
		kafkatest.Produce(t, env, recs...)
		close(release)
		select {
		case offs := <-slow:
			for i, off := range offs {
				require.Equal(t, int64(i), off, "partition 0's records in order, each once")
			}
		case <-time.After(waitFor):
			t.Fatal("partition 0's claim did not get all its records")
		}
	})
}

// A revoked claim's Records close while its partition still belongs to
// the member: what it commits then is where the partition's next owner
// starts.
func TestRevokedClaimCommitsBeforeTheHandOver(t *testing.T) {
	eachClient(t, func(t *testing.T, env *kafkatest.Env) {
		topic, group := kafkatest.Topic(t), kafkatest.GroupID(t)
		kafkatest.CreateTopic(t, env, topic, 2)
		var recs []kafka.Record
		for i := range 20 {
			recs = append(recs, kafka.Record{Topic: topic, Partition: int32(i % 2), Value: fmt.Appendf(nil, "%d", i)})
		}
		kafkatest.Produce(t, env, recs...)

		var mu sync.Mutex
		read := map[int32]int{}
		// m1 commits only when its Records close.
		member(t, groupConfig(env, group, topic), kafka.HandlerFunc(func(ctx context.Context, c kafka.Claim) error {
			for r := range c.Records() {
				c.MarkOffset(r.Topic, r.Partition, r.Offset+1)
				mu.Lock()
				read[r.Partition]++
				mu.Unlock()
			}
			return c.Commit(ctx)
		}))
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return read[0] == 10 && read[1] == 10
		}, waitFor, 20*time.Millisecond)

		initial := make(chan int64, 2)
		member(t, groupConfig(env, group, topic), kafka.HandlerFunc(func(ctx context.Context, c kafka.Claim) error {
			initial <- c.InitialOffset()
			for range c.Records() {
			}
			return nil
		}))
		select {
		case off := <-initial:
			require.Equal(t, int64(10), off, "the new owner starts where the revoked claim committed")
		case <-time.After(waitFor):
			t.Fatal("no partition handed over")
		}
	})
}

// A claim that returns before its Records close ends the member's session:
// every claim of the member ends, and claims of its partitions start
// again at the committed offsets.
func TestClaimReturningEarlyRestartsTheSession(t *testing.T) {
	eachClient(t, func(t *testing.T, env *kafkatest.Env) {
		topic := kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, topic, 2)
		var recs []kafka.Record
		for i := range 20 {
			recs = append(recs, kafka.Record{Topic: topic, Partition: int32(i % 2), Value: fmt.Appendf(nil, "%d", i)})
		}
		kafkatest.Produce(t, env, recs...)

		type start struct {
			partition int32
			initial   int64
		}
		starts := make(chan start, 16)
		var once sync.Once
		var firstGen atomic.Int32
		var last atomic.Pointer[kafka.Claim]
		member(t, groupConfig(env, kafkatest.GroupID(t), topic), kafka.HandlerFunc(func(ctx context.Context, c kafka.Claim) error {
			firstGen.CompareAndSwap(0, c.GenerationID())
			last.Store(&c)
			starts <- start{c.Partition(), c.InitialOffset()}
			for r := range c.Records() {
				if r.Partition != 0 || r.Offset != 4 {
					continue
				}
				quit := false
				once.Do(func() {
					c.MarkOffset(r.Topic, r.Partition, 3)
					require.NoError(t, c.Commit(ctx))
					quit = true
				})
				if quit {
					return nil // before Records closed
				}
			}
			return nil
		}))
		got := map[start]int{}
		for n := 0; n < 4; n++ {
			select {
			case s := <-starts:
				got[s]++
			case <-time.After(waitFor):
				t.Fatalf("claims started: %v", got)
			}
		}
		require.Equal(t, map[start]int{{0, 0}: 1, {1, 0}: 2, {0, 3}: 1}, got,
			"both partitions claimed again, partition 0 at its committed offset")
		// The member joined again: alone, it leads, and its rejoin starts a
		// new generation (a handler that returned because its generation
		// was fenced meets a newer one).
		require.Eventually(t, func() bool { return (*last.Load()).GenerationID() > firstGen.Load() }, waitFor, 20*time.Millisecond,
			"the generation stayed %d", firstGen.Load())
	})
}

// Members on sarama and on franz-go share one group (a rolling change of
// client): the assignment is co-partitioned and balanced across both, no
// partition is held twice, and one takes everything back when the other
// leaves.
func TestMembersOfBothClientsShareAGroup(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		a, b := kafkatest.Topic(t)+"-a", kafkatest.Topic(t)+"-b"
		kafkatest.CreateTopic(t, env, a, 4)
		kafkatest.CreateTopic(t, env, b, 4)
		cfg := groupConfig(env, kafkatest.GroupID(t), a, b)
		cfg.CoPartitioned = [][]string{{a, b}}
		on := func(c kafka.Client) kafka.GroupConfig {
			cc := cfg
			cc.Client = c
			return cc
		}
		tr := newTracker()

		stopSarama := member(t, on(kafka.ClientSarama), tr.handler("sarama"))
		require.Eventually(t, func() bool { return len(tr.of()["sarama"]) == 8 }, waitFor, 20*time.Millisecond)
		stopFranz := member(t, on(kafka.ClientFranz), tr.handler("franz"))
		require.Eventually(t, func() bool {
			held := tr.of()
			return len(held["sarama"]) == 4 && len(held["franz"]) == 4
		}, waitFor, 20*time.Millisecond, "assignment %v", tr.of())
		for _, keys := range tr.of() {
			for p := range 4 {
				require.Equal(t, slices.Contains(keys, fmt.Sprintf("%s/%d", a, p)),
					slices.Contains(keys, fmt.Sprintf("%s/%d", b, p)), "partition %d split: %v", p, tr.of())
			}
		}

		require.NoError(t, stopSarama())
		require.Eventually(t, func() bool { return len(tr.of()["franz"]) == 8 }, waitFor, 20*time.Millisecond)
		require.NoError(t, stopFranz())
		tr.requireSafe(t)
	})
}
