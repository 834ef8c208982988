package txn_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/txn"
)

func TestCommit(t *testing.T) {
	run(t, func(t *testing.T, env *kafkatest.Env) {
		f := setup(t, env)
		s := f.session(t)

		first := f.records("a", 20)
		require.NoError(t, f.txn(t, s, first, f.offsets(5, 7)))
		f.requireVisible(t, values(first))
		require.Equal(t, [2]int64{5, 7}, f.committed(t))

		// Keyed records land where the Java client's partitioner puts them.
		for _, r := range kafkatest.ReadCommitted(t, env, f.out) {
			want, err := kafka.PartitionForKey(r.Key, 2)
			require.NoError(t, err)
			require.Equal(t, want, r.Partition, "key %s", r.Key)
		}

		// The next transaction moves on from there; an explicit partition
		// is kept.
		second := f.records("b", 3)
		second[0].Partition = 1
		require.NoError(t, f.txn(t, s, second, f.offsets(9, 7)))
		f.requireVisible(t, values(first, second))
		require.Equal(t, [2]int64{9, 7}, f.committed(t))
		require.Equal(t, int64(1), txn.Inits(s))
	})
}

func TestAbort(t *testing.T) {
	run(t, func(t *testing.T, env *kafkatest.Env) {
		f := setup(t, env)
		s := f.session(t)
		base := f.records("base", 4)
		require.NoError(t, f.txn(t, s, base, f.offsets(1, 1)))

		require.NoError(t, s.Begin(ctx(t)))
		before := f.written(t)
		send(t, s, f.records("aborted", 10))
		f.waitWritten(t, before+10) // in the log, uncommitted
		require.NoError(t, s.Abort(ctx(t)))
		f.requireVisible(t, values(base))
		require.Equal(t, [2]int64{1, 1}, f.committed(t))

		// The session goes on after an abort.
		after := f.records("after", 2)
		require.NoError(t, f.txn(t, s, after, f.offsets(3, 2)))
		f.requireVisible(t, values(base, after))
		require.Equal(t, [2]int64{3, 2}, f.committed(t))

		// An abort with nothing produced, and with nothing open.
		require.NoError(t, s.Begin(ctx(t)))
		require.NoError(t, s.Abort(ctx(t)))
		require.NoError(t, s.Abort(ctx(t)))
		require.Equal(t, [2]int64{3, 2}, f.committed(t))
	})
}

// TestOffsetsOnly checks that a transaction without records still commits
// its offsets (sarama before v1.61.1 silently dropped them).
func TestOffsetsOnly(t *testing.T) {
	run(t, func(t *testing.T, env *kafkatest.Env) {
		f := setup(t, env)
		s := f.session(t)
		require.NoError(t, f.txn(t, s, nil, f.offsets(11, 0)))
		require.Equal(t, [2]int64{11, 0}, f.committed(t))
		f.requireVisible(t, nil)

		// Twice in a row, then one with records, then offsets-only again.
		require.NoError(t, f.txn(t, s, nil, f.offsets(12, 1)))
		recs := f.records("r", 2)
		require.NoError(t, f.txn(t, s, recs, f.offsets(13, 2)))
		require.NoError(t, f.txn(t, s, nil, f.offsets(14, 3)))
		require.Equal(t, [2]int64{14, 3}, f.committed(t))
		f.requireVisible(t, values(recs))

		// Nothing at all: nothing to send, nothing changes.
		require.NoError(t, f.txn(t, s, nil, nil))
		require.Equal(t, [2]int64{14, 3}, f.committed(t))
	})
}

// TestFencing starts a second Session with the same transactional id while
// the first has records in an open transaction.
func TestFencing(t *testing.T) {
	run(t, func(t *testing.T, env *kafkatest.Env) {
		f := setup(t, env)
		zombie := f.session(t)
		require.NoError(t, zombie.Begin(ctx(t)))
		send(t, zombie, f.records("zombie", 6))
		f.waitWritten(t, 6) // in the log, uncommitted

		s := f.session(t) // InitProducerId: aborts the zombie's transaction
		err := zombie.Commit(ctx(t), f.offsets(6, 6), f.gm())
		require.ErrorIs(t, err, txn.ErrFenced)
		var xe *txn.Error
		require.ErrorAs(t, err, &xe)
		require.Equal(t, "commit", xe.Op)
		require.True(t, errors.Is(err, sarama.ErrProducerFenced) || errors.Is(err, sarama.ErrInvalidProducerEpoch), "%v", err)
		f.requireVisible(t, nil)
		require.Equal(t, [2]int64{-1, -1}, f.committed(t))

		// The zombie stays fenced until Reset; it does not disturb the
		// new session.
		require.ErrorIs(t, zombie.Begin(ctx(t)), txn.ErrFenced)
		require.ErrorIs(t, zombie.Send(ctx(t), f.records("z", 1)[0]), txn.ErrFenced)
		recs := f.records("new", 3)
		require.NoError(t, f.txn(t, s, recs, f.offsets(6, 6)))
		f.requireVisible(t, values(recs))
		require.Equal(t, [2]int64{6, 6}, f.committed(t))
	})
}

// TestFencedWhileSending fences a session between two of its sends: the
// records after the fence fail, and so does the commit.
func TestFencedWhileSending(t *testing.T) {
	run(t, func(t *testing.T, env *kafkatest.Env) {
		if raceEnabled && !onFranz() {
			// sarama v1.61.1 races with itself when a transactional batch fails
			// while the producer adds partitions to the transaction
			// (transactionManager.transitionTo via asyncProducer.retryBatch
			// against publishTxnPartitions), which is what fencing a zombie
			// mid-send does. The race detector then fails the test whatever
			// weir does; the test runs without -race.
			t.Skip("sarama's own data race on failed transactional batches (see comment)")
		}
		f := setup(t, env)
		zombie := f.session(t)
		require.NoError(t, zombie.Begin(ctx(t)))
		send(t, zombie, f.records("before", 2))
		f.waitWritten(t, 2)
		_ = f.session(t)

		// Sends fail fast once the failure is known; until then they
		// succeed. A broker answers INVALID_PRODUCER_EPOCH (fenced), or —
		// kfake, and Kafka verifying partitions (KIP-890 part 1) —
		// INVALID_TXN_STATE (indefinite): either way, Reset is next.
		var sendErr error
		require.Eventually(t, func() bool {
			sendErr = zombie.Send(ctx(t), f.records("after", 1)[0])
			return sendErr != nil
		}, kafkatest.Timeout, 10*time.Millisecond)
		var xe *txn.Error
		require.ErrorAs(t, sendErr, &xe)
		require.Contains(t, []error{txn.ErrFenced, txn.ErrIndefinite}, xe.Kind, "%v", sendErr)
		require.ErrorIs(t, zombie.Commit(ctx(t), f.offsets(1, 1), f.gm()), xe.Kind)
		require.ErrorIs(t, zombie.Begin(ctx(t)), xe.Kind)
		f.requireVisible(t, nil)
	})
}

// TestGroupMetadata commits with the metadata of a live group member (a
// franz-go consumer): accepted with the member's generation, rejected as
// fenced with another generation or an unknown member (KIP-447).
func TestGroupMetadata(t *testing.T) {
	run(t, func(t *testing.T, env *kafkatest.Env) {
		f := setup(t, env)
		assigned := make(chan struct{})
		var once sync.Once
		member, err := kgo.NewClient(
			kgo.SeedBrokers(env.Brokers...),
			kgo.ConsumerGroup(f.group),
			kgo.ConsumeTopics(f.in),
			kgo.DisableAutoCommit(),
			kgo.SessionTimeout(6*time.Second),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, _ map[string][]int32) {
				once.Do(func() { close(assigned) })
			}),
		)
		require.NoError(t, err)
		defer member.Close()
		go func() { // the member only makes progress while polled
			for {
				if fs := member.PollFetches(t.Context()); fs.IsClientClosed() || t.Context().Err() != nil {
					return
				}
			}
		}()
		select {
		case <-assigned:
		case <-ctx(t).Done():
			t.Fatal("member not assigned")
		}
		memberID, gen := member.GroupMetadata()
		live := kafka.GroupMetadata{GroupID: f.group, GenerationID: gen, MemberID: memberID}

		s := f.session(t)
		require.NoError(t, s.Begin(ctx(t)))
		require.NoError(t, s.Commit(ctx(t), f.offsets(4, 2), live))
		require.Equal(t, [2]int64{4, 2}, f.committed(t))

		for name, gm := range map[string]kafka.GroupMetadata{
			"stale generation": {GroupID: f.group, GenerationID: gen + 7, MemberID: memberID},
			"unknown member":   {GroupID: f.group, GenerationID: gen, MemberID: "weir-not-a-member"},
		} {
			require.NoError(t, s.Begin(ctx(t)), name)
			send(t, s, f.records(name, 2))
			err := s.Commit(ctx(t), f.offsets(9, 9), gm)
			require.ErrorIs(t, err, txn.ErrFenced, name)
			require.True(t, errors.Is(err, sarama.ErrIllegalGeneration) || errors.Is(err, sarama.ErrUnknownMemberId), "%s: %v", name, err)
			require.NoError(t, s.Reset(ctx(t)), name)
		}
		f.requireVisible(t, nil)
		require.Equal(t, [2]int64{4, 2}, f.committed(t))
	})
}

// TestConcurrentSend sends from many goroutines into one transaction.
func TestConcurrentSend(t *testing.T) {
	run(t, func(t *testing.T, env *kafkatest.Env) {
		f := setup(t, env)
		s := f.session(t)
		require.NoError(t, s.Begin(ctx(t)))
		const workers, each = 8, 50
		var want []kafka.Record
		var wg sync.WaitGroup
		for w := range workers {
			rs := f.records(fmt.Sprintf("w%d", w), each)
			want = append(want, rs...)
			wg.Go(func() {
				for _, r := range rs {
					if err := s.Send(ctx(t), r); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		require.NoError(t, s.Commit(ctx(t), f.offsets(400, 0), f.gm()))
		f.requireVisible(t, values(want))
	})
}

// TestUsage checks the errors for calls out of order; none needs a broker
// round trip to be detected.
func TestUsage(t *testing.T) {
	run(t, func(t *testing.T, env *kafkatest.Env) {
		f := setup(t, env)
		s := f.session(t)
		r := f.records("r", 1)[0]
		require.ErrorIs(t, s.Send(ctx(t), r), txn.ErrNoTransaction)
		require.ErrorIs(t, s.Commit(ctx(t), nil, f.gm()), txn.ErrNoTransaction)
		require.NoError(t, s.Abort(ctx(t)))

		require.NoError(t, s.Begin(ctx(t)))
		require.ErrorIs(t, s.Begin(ctx(t)), txn.ErrTransactionOpen)
		require.Error(t, s.Send(ctx(t), kafka.Record{Value: []byte("no topic")}))

		// Invalid arguments leave the transaction open.
		for _, bad := range []struct {
			offsets map[txn.TopicPartition]int64
			gm      kafka.GroupMetadata
		}{
			{f.offsets(1, 1), kafka.GroupMetadata{}},
			{map[txn.TopicPartition]int64{{Topic: "", Partition: 0}: 1}, f.gm()},
			{map[txn.TopicPartition]int64{{Topic: f.in, Partition: -1}: 1}, f.gm()},
			{map[txn.TopicPartition]int64{{Topic: f.in, Partition: 0}: -2}, f.gm()},
		} {
			err := s.Commit(ctx(t), bad.offsets, bad.gm)
			require.Error(t, err)
			var xe *txn.Error
			require.False(t, errors.As(err, &xe), "%v has a kind", err)
		}
		send(t, s, []kafka.Record{r})
		require.NoError(t, s.Commit(ctx(t), f.offsets(1, 1), f.gm()))
		f.requireVisible(t, []string{"r-0"})

		// A Send during Commit either joins or fails; after Commit it fails.
		require.ErrorIs(t, s.Send(ctx(t), r), txn.ErrNoTransaction)

		require.NoError(t, s.Close())
		require.NoError(t, s.Close())
		require.ErrorIs(t, s.Begin(ctx(t)), txn.ErrClosed)
		require.ErrorIs(t, s.Send(ctx(t), r), txn.ErrClosed)
		require.ErrorIs(t, s.Commit(ctx(t), nil, f.gm()), txn.ErrClosed)
		require.ErrorIs(t, s.Abort(ctx(t)), txn.ErrClosed)
		require.ErrorIs(t, s.Reset(ctx(t)), txn.ErrClosed)
	})
}

// TestPartitionOutOfRange sends to a partition the topic does not have:
// redoing that cannot help, so the error is fatal.
func TestPartitionOutOfRange(t *testing.T) {
	kafkatest.Long(t)
	run(t, func(t *testing.T, env *kafkatest.Env) {
		f := setup(t, env)
		s := f.session(t)
		require.NoError(t, s.Begin(ctx(t)))
		send(t, s, f.records("ok", 2))
		require.NoError(t, s.Send(ctx(t), kafka.Record{Topic: f.out, Partition: 7, Value: []byte("nowhere")}))
		err := s.Commit(ctx(t), f.offsets(1, 1), f.gm())
		require.ErrorIs(t, err, txn.ErrFatal)
		if !onFranz() {
			require.ErrorIs(t, err, sarama.ErrInvalidPartition)
		}
		var pe *kafka.PartitionError
		require.ErrorAs(t, err, &pe)
		require.Equal(t, f.out, pe.Topic)
		require.NoError(t, s.Abort(ctx(t)))
		recs := f.records("after", 2)
		require.NoError(t, f.txn(t, s, recs, f.offsets(1, 1)))
		f.requireVisible(t, values(recs))
	})
}

// TestEventTimeTimestamps commits records stamped with an event time long
// past, as a replayed input's are: no client may count their age as time
// spent waiting for delivery (kgo's RecordDeliveryTimeout does).
func TestEventTimeTimestamps(t *testing.T) {
	run(t, func(t *testing.T, env *kafkatest.Env) {
		f := setup(t, env)
		s := f.session(t)
		rs := f.records("old", 10)
		for i := range rs {
			rs[i].Timestamp = time.UnixMilli(int64(1000 + i))
		}
		require.NoError(t, f.txn(t, s, rs, f.offsets(1, 1)))
		f.requireVisible(t, values(rs))
	})
}
