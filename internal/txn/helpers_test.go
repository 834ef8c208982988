package txn_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/txn"
)

// clients are the client libraries every session test runs on.
var clients = []kafka.Client{kafka.ClientSarama, kafka.ClientFranz}

// run runs fn as kafkatest.Run does, once per client (subtests "sarama"
// and "franz-go"; the client is picked through kafka.ClientEnv, as the
// integration suite does).
func run(t *testing.T, fn func(t *testing.T, env *kafkatest.Env)) {
	t.Helper()
	for _, c := range clients {
		t.Run(string(c), func(t *testing.T) {
			t.Setenv(kafka.ClientEnv, string(c))
			kafkatest.Run(t, fn)
		})
	}
}

// onFranz reports whether the test runs on franz-go (see run).
func onFranz() bool { return os.Getenv(kafka.ClientEnv) == string(kafka.ClientFranz) }

// fixture is what most tests need: an output topic, an input topic whose
// offsets the transactions commit, a group and a transactional id.
type fixture struct {
	env   *kafkatest.Env
	out   string
	in    string
	group string
	txnID string
}

// setup creates the topics (2 partitions each).
func setup(t *testing.T, env *kafkatest.Env) *fixture {
	t.Helper()
	f := &fixture{
		env:   env,
		out:   kafkatest.Topic(t),
		in:    kafkatest.Topic(t),
		group: kafkatest.GroupID(t),
		txnID: "weir-txn-" + kafkatest.GroupID(t),
	}
	kafkatest.CreateTopic(t, env, f.out, 2)
	kafkatest.CreateTopic(t, env, f.in, 2)
	return f
}

// config returns a session configuration; mods adjust it.
func (f *fixture) config(mods ...func(*txn.Config)) txn.Config {
	cfg := txn.Config{
		Kafka:              f.env.Config(),
		TransactionalID:    f.txnID,
		TransactionTimeout: 20 * time.Second,
		SessionTimeout:     30 * time.Second,
	}
	for _, m := range mods {
		m(&cfg)
	}
	return cfg
}

// session starts a Session, closed when the test ends.
func (f *fixture) session(t *testing.T, mods ...func(*txn.Config)) *txn.Session {
	t.Helper()
	s, err := txn.New(ctx(t), f.config(mods...))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// gm is group metadata that skips member fencing (no member).
func (f *fixture) gm() kafka.GroupMetadata {
	return kafka.GroupMetadata{GroupID: f.group, GenerationID: -1}
}

// offsets returns the input offsets {0: p0, 1: p1}.
func (f *fixture) offsets(p0, p1 int64) map[txn.TopicPartition]int64 {
	return map[txn.TopicPartition]int64{{Topic: f.in, Partition: 0}: p0, {Topic: f.in, Partition: 1}: p1}
}

// records returns n keyed records for the output topic, values
// "<prefix>-<i>".
func (f *fixture) records(prefix string, n int) []kafka.Record {
	rs := make([]kafka.Record, n)
	for i := range rs {
		rs[i] = kafka.Record{
			Topic:     f.out,
			Partition: kafka.PartitionByKey,
			Key:       fmt.Appendf(nil, "k%d", i),
			Value:     fmt.Appendf(nil, "%s-%d", prefix, i),
		}
	}
	return rs
}

// txn runs Begin, Send of rs, Commit.
func (f *fixture) txn(t *testing.T, s *txn.Session, rs []kafka.Record, offsets map[txn.TopicPartition]int64) error {
	t.Helper()
	if err := s.Begin(ctx(t)); err != nil {
		return err
	}
	send(t, s, rs)
	return s.Commit(ctx(t), offsets, f.gm())
}

func send(t *testing.T, s *txn.Session, rs []kafka.Record) {
	t.Helper()
	for _, r := range rs {
		require.NoError(t, s.Send(ctx(t), r))
	}
}

// visible returns the values a read_committed consumer sees in the output
// topic, sorted.
func (f *fixture) visible(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, r := range kafkatest.ReadCommitted(t, f.env, f.out) {
		out = append(out, string(r.Value))
	}
	slices.Sort(out)
	return out
}

// requireVisible waits until a read_committed consumer sees exactly want
// (sorted) in the output topic. Kafka answers EndTxn before it writes the
// transaction markers, so the last stable offset may lag a commit for a
// moment; kfake writes them at once.
func (f *fixture) requireVisible(t *testing.T, want []string, msgAndArgs ...any) {
	t.Helper()
	var got []string
	deadline := time.Now().Add(kafkatest.Timeout)
	for {
		got = f.visible(t)
		if slices.Equal(got, want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.Equal(t, want, got, msgAndArgs...)
}

// values returns the sorted values of rs.
func values(rs ...[]kafka.Record) []string {
	var out []string
	for _, batch := range rs {
		for _, r := range batch {
			out = append(out, string(r.Value))
		}
	}
	slices.Sort(out)
	return out
}

// committed returns the group's stable committed offsets of the input
// topic's partitions 0 and 1 (-1: none), read with franz-go.
func (f *fixture) committed(t *testing.T) [2]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.env.Brokers...))
	require.NoError(t, err)
	defer cl.Close()
	var got [2]int64
	require.Eventually(t, func() bool {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group = f.group
		req.RequireStable = true
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic = f.in
		rt.Partitions = []int32{0, 1}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx(t), cl)
		if err != nil {
			return false
		}
		got = [2]int64{-1, -1}
		for _, g := range resp.Groups {
			if kerr.ErrorForCode(g.ErrorCode) != nil {
				return errorsIsGroupNotFound(g.ErrorCode)
			}
			for _, tp := range g.Topics {
				for _, p := range tp.Partitions {
					if p.ErrorCode != 0 {
						return false // UNSTABLE_OFFSET_COMMIT: a transaction is open
					}
					got[p.Partition] = p.Offset
				}
			}
		}
		if len(resp.Groups) == 0 {
			if kerr.ErrorForCode(resp.ErrorCode) != nil {
				return errorsIsGroupNotFound(resp.ErrorCode)
			}
			for _, tp := range resp.Topics {
				for _, p := range tp.Partitions {
					if p.ErrorCode != 0 {
						return false
					}
					got[p.Partition] = p.Offset
				}
			}
		}
		return true
	}, kafkatest.Timeout, 20*time.Millisecond, "committed offsets of %q", f.group)
	return got
}

func errorsIsGroupNotFound(code int16) bool { return code == kerr.GroupIDNotFound.Code }

// uncommittedEnd returns the high watermark of an output partition.
func (f *fixture) uncommittedEnd(t *testing.T, partition int32) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.env.Brokers...))
	require.NoError(t, err)
	defer cl.Close()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = f.out
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = partition, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx(t), cl)
	require.NoError(t, err)
	p := resp.Topics[0].Partitions[0]
	require.NoError(t, kerr.ErrorForCode(p.ErrorCode))
	return p.Offset
}

// written returns the sum of the output partitions' high watermarks:
// records (committed or not) and transaction markers.
func (f *fixture) written(t *testing.T) int64 {
	t.Helper()
	return f.uncommittedEnd(t, 0) + f.uncommittedEnd(t, 1)
}

// waitWritten waits until written reaches n.
func (f *fixture) waitWritten(t *testing.T, n int64) {
	t.Helper()
	require.Eventually(t, func() bool { return f.written(t) >= n }, kafkatest.Timeout, 10*time.Millisecond)
}

// ctx is bounded by kafkatest.Timeout and the test's end.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(t.Context(), kafkatest.Timeout)
	t.Cleanup(cancel)
	return c
}
