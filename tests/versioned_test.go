package tests

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

// A versioned table and a join's grace buffer survive a move: an instance
// with an empty state directory restores both from their changelogs, then
// answers as-of queries from the table's history and lets out the stream
// records the first instance held.
func TestVersionedTableAndGraceBufferRestore(t *testing.T) {
	t.Parallel() // mostly waits (group joins, timeouts): beside the other tests that do
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		prices, orders, out := kafkatest.Topic(t), kafkatest.Topic(t), kafkatest.Topic(t)
		for _, topic := range []string{prices, orders, out} {
			kafkatest.CreateTopic(t, env, topic, 1)
		}
		b := topology.NewBuilder()
		str := serde.String()
		table := topology.NewTable(b, prices, str, str, topology.Materialized("prices"), topology.Versioned(time.Hour))
		topology.Join(topology.NewStream(b, orders, str, str), table,
			func(_, qty, price string) string { return qty + "@" + price }, topology.WithGrace(time.Minute), topology.Named("priced")).To(out)
		topo, err := b.Build()
		require.NoError(t, err)
		appID := kafkatest.GroupID(t)
		at := func(ms int64) time.Time { return time.UnixMilli(1_700_000_000_000 + ms) }
		rec := func(topic, k, v string, ms int64) kafka.Record {
			return kafka.Record{Topic: topic, Partition: 0, Key: []byte(k), Value: []byte(v), Timestamp: at(ms)}
		}
		asOf := func(addr string, ms int64) (string, int) {
			status, body := get(t, addr, "/stores/prices/keys/apple?asOf="+time.UnixMilli(at(ms).UnixMilli()).UTC().Format(time.RFC3339Nano))
			if status != http.StatusOK {
				return "", status
			}
			var r struct{ Value string }
			require.NoError(t, json.Unmarshal(body, &r))
			return r.Value, status
		}

		first := startInstance(t, topo, env, appID, weir.WithHTTP("127.0.0.1:0"), weir.WithGuarantee(weir.ExactlyOnce))
		kafkatest.Produce(t, env, rec(prices, "apple", "1", 0), rec(prices, "apple", "2", 1000))
		addr := httpAddrs(t, first)[0]
		require.Eventually(t, func() bool { v, _ := asOf(addr, 1000); return v == "2" }, 60*time.Second, 100*time.Millisecond)
		// Held: the buffer's stream time never passes 500 + 1 min here.
		kafkatest.Produce(t, env, rec(orders, "apple", "5", 500))
		require.Eventually(t, func() bool {
			return len(kafkatest.ReadCommitted(t, env, appID+"-priced-Buffer-changelog")) > 0
		}, 60*time.Second, 100*time.Millisecond, "the held order is in the buffer's changelog")
		require.NoError(t, first.stop(t))
		require.Empty(t, kafkatest.ReadCommitted(t, env, out), "the order is held for the grace period")

		second := startInstance(t, topo, env, appID, weir.WithHTTP("127.0.0.1:0"), weir.WithGuarantee(weir.ExactlyOnce))
		defer func() { require.NoError(t, second.stop(t)) }()
		addr = httpAddrs(t, second)[0]
		require.Eventually(t, func() bool { v, _ := asOf(addr, 999); return v == "1" }, 60*time.Second, 100*time.Millisecond,
			"the restored table answers from its history")
		kafkatest.Produce(t, env, rec(orders, "pear", "9", 61_000))
		require.Eventually(t, func() bool {
			got := kafkatest.ReadCommitted(t, env, out)
			return len(got) == 1 && string(got[0].Value) == "5@1" && got[0].Timestamp.Equal(at(500))
		}, 60*time.Second, 100*time.Millisecond, "the restored buffer lets the held order out, joined as of its time")
	})
}
