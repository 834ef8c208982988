package txn_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/txn"
)

// BenchmarkCommit measures one transaction as an epoch of the continuous
// engine runs it — Begin, 200 records sent back to back, Commit with the
// offsets of two input partitions — on each client, and on franz-go with
// the offsets sent only once every record has its outcome (serial) rather
// than while they are in flight. ns/op is the transaction's latency; the
// records' delivery overlaps the commit either way. On kfake by default,
// on the cluster KAFKA_BROKERS names when set:
//
//	KAFKA_BROKERS=127.0.0.1:9092 go test -run '^$' -bench BenchmarkCommit ./internal/txn
func BenchmarkCommit(b *testing.B) {
	env := &kafkatest.Env{Name: "kafka", Brokers: kafkatest.RealBrokers()}
	if len(env.Brokers) == 0 {
		env = kafkatest.Kfake(b, kafkatest.KfakeOptions())
	}
	out, in := kafkatest.Topic(b), kafkatest.Topic(b)
	kafkatest.CreateTopic(b, env, out, 4)
	kafkatest.CreateTopic(b, env, in, 2)
	group := kafkatest.GroupID(b)
	for _, c := range []struct {
		name   string
		client kafka.Client
		mods   func(*txn.Config)
	}{
		{"sarama", kafka.ClientSarama, nil},
		{"franz-go-serial", kafka.ClientFranz, txn.SerialOffsets},
		{"franz-go", kafka.ClientFranz, nil},
	} {
		b.Run(c.name, func(b *testing.B) {
			cfg := txn.Config{
				Kafka:              env.Config(),
				TransactionalID:    fmt.Sprintf("weir-bench-%s-%s", c.name, group),
				TransactionTimeout: 20 * time.Second,
				SessionTimeout:     30 * time.Second,
			}
			cfg.Kafka.Client = c.client
			if c.mods != nil {
				c.mods(&cfg)
			}
			s, err := txn.New(b.Context(), cfg)
			require.NoError(b, err)
			defer s.Close()
			gm := kafka.GroupMetadata{GroupID: group, GenerationID: -1}
			rs := make([]kafka.Record, 200)
			for i := range rs {
				rs[i] = kafka.Record{Topic: out, Partition: kafka.PartitionByKey, Key: fmt.Appendf(nil, "k%d", i), Value: make([]byte, 100)}
			}
			b.ResetTimer()
			for i := range b.N {
				require.NoError(b, s.Begin(b.Context()))
				for _, r := range rs {
					require.NoError(b, s.Send(b.Context(), r))
				}
				offs := map[txn.TopicPartition]int64{{Topic: in, Partition: 0}: int64(i + 1), {Topic: in, Partition: 1}: int64(i + 1)}
				require.NoError(b, s.Commit(b.Context(), offs, gm))
			}
		})
	}
}
