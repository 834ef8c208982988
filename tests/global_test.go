package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/microbatch"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

// Two instances of an application with a global table: each joins the
// partitions of the stream it runs against the whole table, read from
// every partition of its topic; an update of the table after the start
// reaches both. A restart with the same state dir resumes the table from
// its checkpoint, reading only the records written since.
func TestGlobalTableOnTwoInstances(t *testing.T) {
	kafkatest.Long(t)
	modes := []struct {
		name string
		opts []weir.Option
	}{
		{"continuous/at-least-once", []weir.Option{weir.WithGuarantee(weir.AtLeastOnce)}},
		{"continuous/exactly-once", []weir.Option{weir.WithGuarantee(weir.ExactlyOnce)}},
		{"micro-batch/at-least-once", []weir.Option{weir.WithMicroBatch(microbatch.Config{})}},
		{"micro-batch/exactly-once", []weir.Option{weir.WithGuarantee(weir.ExactlyOnce), weir.WithMicroBatch(microbatch.Config{})}},
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
				orders, users, out := kafkatest.Topic(t), kafkatest.Topic(t), kafkatest.Topic(t)
				kafkatest.CreateTopic(t, env, orders, 4)
				kafkatest.CreateTopic(t, env, users, 3) // not co-partitioned with orders
				kafkatest.CreateTopic(t, env, out, 4)
				appID := kafkatest.GroupID(t)
				b := topology.NewBuilder()
				table := topology.NewGlobalTable(b, users, serde.String(), serde.String(), topology.Materialized("users"))
				stream := topology.NewStream(b, orders, serde.String(), serde.String())
				topology.JoinGlobal(stream, table, func(_, user string) (string, bool) { return user, true },
					func(_, user, name string) string { return user + "=" + name }).To(out)
				topo, err := b.Build()
				require.NoError(t, err)

				var recs []kafka.Record
				for i := range 10 {
					recs = append(recs, kafka.Record{Topic: users, Partition: kafka.PartitionByKey,
						Key: fmt.Appendf(nil, "u%d", i), Value: fmt.Appendf(nil, "name%d", i), Timestamp: time.UnixMilli(1)})
				}
				kafkatest.Produce(t, env, recs...)

				dirA := t.TempDir()
				opts := append([]weir.Option{weir.WithHTTP("127.0.0.1:0")}, mode.opts...)
				a := startInstance(t, topo, env, appID, append(opts, weir.WithStateDir(dirA))...)
				c := startInstance(t, topo, env, appID, opts...)
				time.Sleep(3 * time.Second) // both are members: each runs half the tasks

				orderRecs := func(n int, user, batch string) []kafka.Record {
					var rs []kafka.Record
					for i := range n {
						rs = append(rs, kafka.Record{Topic: orders, Partition: kafka.PartitionByKey,
							Key: fmt.Appendf(nil, "%s-o%d", batch, i), Value: []byte(user), Timestamp: time.UnixMilli(2)})
					}
					return rs
				}
				kafkatest.Produce(t, env, orderRecs(20, "u3", "first")...)
				waitJoined(t, env, out, 20, "u3=name3")

				kafkatest.Produce(t, env, kafka.Record{Topic: users, Partition: kafka.PartitionByKey,
					Key: []byte("u3"), Value: []byte("renamed"), Timestamp: time.UnixMilli(3)})
				require.Eventually(t, func() bool {
					return a.app.Stats().GlobalRead == 11 && c.app.Stats().GlobalRead == 11
				}, time.Minute, 20*time.Millisecond, "both instances read the update")
				// Each instance answers a query of the global store itself.
				for _, addr := range httpAddrs(t, a, c) {
					status, body := get(t, addr, keyPath("users", "u3"))
					require.Equal(t, http.StatusOK, status, "%s", body)
					var r struct {
						Value    string `json:"value"`
						ServedBy string `json:"servedBy"`
					}
					require.NoError(t, json.Unmarshal(body, &r))
					require.Equal(t, "renamed", r.Value)
					require.Equal(t, addr, r.ServedBy)
				}
				kafkatest.Produce(t, env, orderRecs(20, "u3", "second")...)
				joined := waitJoined(t, env, out, 40, "")
				partitions := map[int32]bool{}
				for _, r := range joined {
					if !strings.HasPrefix(string(r.Key), "second-") {
						continue
					}
					require.Equal(t, "u3=renamed", string(r.Value), "every partition's task sees the update")
					partitions[r.Partition] = true
				}
				require.Len(t, partitions, 4, "the orders reached every partition")
				require.Positive(t, a.app.Stats().RecordsIn, "both instances joined some")
				require.Positive(t, c.app.Stats().RecordsIn, "both instances joined some")

				require.NoError(t, a.stop(t))
				kafkatest.Produce(t, env, kafka.Record{Topic: users, Partition: kafka.PartitionByKey,
					Key: []byte("u4"), Value: nil, Timestamp: time.UnixMilli(4)})
				a = startInstance(t, topo, env, appID, append(opts, weir.WithStateDir(dirA))...)
				require.Eventually(t, func() bool { return a.app.Stats().GlobalRead == 1 },
					time.Minute, 20*time.Millisecond, "the restart reads only the tail")
				time.Sleep(200 * time.Millisecond)
				require.Equal(t, int64(1), a.app.Stats().GlobalRead)
				require.NoError(t, a.stop(t))
				require.NoError(t, c.stop(t))
			})
		})
	}
}

// waitJoined waits until topic holds n records and returns them; with want
// set, each must have that value.
func waitJoined(t *testing.T, env *kafkatest.Env, topic string, n int, want string) []kafka.Record {
	t.Helper()
	var got []kafka.Record
	require.Eventually(t, func() bool {
		got = kafkatest.ReadCommitted(t, env, topic)
		return len(got) >= n
	}, time.Minute, 100*time.Millisecond, "the joined records never appeared")
	require.Len(t, got, n)
	for _, r := range got {
		if want != "" {
			require.Equal(t, want, string(r.Value))
		}
	}
	return got
}

// A record of a global table's topic that its serdes cannot read follows
// the bad-record policy: skipped and counted under Skip, while the good
// records around it are applied; under Fail the instance does not start,
// naming the record.
func TestGlobalTableBadRecords(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		orders, prices, out := kafkatest.Topic(t), kafkatest.Topic(t), kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, orders, 2)
		kafkatest.CreateTopic(t, env, prices, 1)
		kafkatest.CreateTopic(t, env, out, 2)
		b := topology.NewBuilder()
		table := topology.NewGlobalTable(b, prices, serde.String(), serde.Int64(), topology.Materialized("prices"))
		stream := topology.NewStream(b, orders, serde.String(), serde.String())
		topology.JoinGlobal(stream, table, func(_, item string) (string, bool) { return item, true },
			func(_, item string, price int64) string { return fmt.Sprintf("%s@%d", item, price) }).To(out)
		topo, err := b.Build()
		require.NoError(t, err)
		price := func(item string, value []byte) kafka.Record {
			return kafka.Record{Topic: prices, Partition: 0, Key: []byte(item), Value: value, Timestamp: time.UnixMilli(1)}
		}
		eight, err := serde.Int64().Serialize(prices, 8)
		require.NoError(t, err)
		kafkatest.Produce(t, env, price("pen", []byte("bad")), price("ink", eight))

		failing, err := weir.New(topo, baseOptions(t, env, kafkatest.GroupID(t))...)
		require.NoError(t, err)
		err = failing.Run(t.Context())
		require.ErrorContains(t, err, prices+"/0@0", "Fail stops the instance at the bad record")

		skipping := startInstance(t, topo, env, kafkatest.GroupID(t), weir.WithBadRecordPolicy(weir.Skip))
		require.Eventually(t, func() bool { return skipping.app.Stats().GlobalRead == 2 },
			time.Minute, 20*time.Millisecond, "the global reader read both records")
		require.Equal(t, int64(1), skipping.app.Stats().Skipped)
		kafkatest.Produce(t, env, kafka.Record{Topic: orders, Partition: 0, Key: []byte("o1"), Value: []byte("ink"), Timestamp: time.UnixMilli(2)},
			kafka.Record{Topic: orders, Partition: 1, Key: []byte("o2"), Value: []byte("pen"), Timestamp: time.UnixMilli(2)})
		got := waitJoined(t, env, out, 1, "ink@8")
		require.Equal(t, "o1", string(got[0].Key))
		require.NoError(t, skipping.stop(t))
	})
}
