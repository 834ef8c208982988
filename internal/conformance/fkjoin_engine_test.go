package conformance_test

import (
	"context"
	"io"
	"log/slog"
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

// TestForeignKeyJoinOnEngines runs foreign-key joins of tables that are not
// co-partitioned (orders on 2 partitions, customers on 3) through both
// engines, inputs of both tables at once: whatever order the engine reads
// them in, each result converges to the join of the final tables.
func TestForeignKeyJoinOnEngines(t *testing.T) {
	if testing.Short() {
		t.Skip("runs applications on a broker")
	}
	kafkatest.Long(t) // minutes on a busy machine: CI runs it (WEIR_LONG_TESTS=1)
	modes := []struct {
		name string
		opts []weir.Option
	}{
		{"continuous", nil},
		{"micro-batch", []weir.Option{weir.WithMicroBatch(microbatch.Config{Trigger: microbatch.AvailableNow(), MaxRecordsPerBatch: 3})}},
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
				base := kafkatest.Topic(t)
				orders, customers, inner, left := base+"-orders", base+"-customers", base+"-inner", base+"-left"
				kafkatest.CreateTopic(t, env, orders, 2)
				kafkatest.CreateTopic(t, env, customers, 3)
				kafkatest.CreateTopic(t, env, inner, 2)
				kafkatest.CreateTopic(t, env, left, 2)

				b := topology.NewBuilder()
				str := serde.String()
				o := topology.NewTable(b, orders, str, str)
				c := topology.NewTable(b, customers, str, str, topology.Materialized("customers"))
				fk := func(_, v string) string { k, _, _ := strings.Cut(v, "|"); return k }
				topology.JoinTablesOnForeignKey(o, c, fk, func(v, name string) string { return name + " ordered " + v }).
					ToStream().To(inner)
				topology.LeftJoinTablesOnForeignKey(o, c, fk, func(v, name string, found bool) string {
					if !found {
						name = "nobody"
					}
					return name + " ordered " + v
				}).ToStream().To(left)
				topo, err := b.Build()
				require.NoError(t, err)

				rec := func(topic, k string, v *string, ts int64) kafka.Record {
					r := kafka.Record{Topic: topic, Partition: kafka.PartitionByKey, Key: []byte(k), Timestamp: time.UnixMilli(ts)}
					if v != nil {
						r.Value = []byte(*v)
					}
					return r
				}
				s := func(v string) *string { return &v }
				kafkatest.Produce(t, env,
					rec(customers, "c1", s("Ann"), 1), rec(customers, "c2", s("Bob"), 2), rec(customers, "c3", s("Cy"), 3),
					rec(orders, "o1", s("c1|pen"), 4), rec(orders, "o2", s("c2|ink"), 5), rec(orders, "o3", s("c3|cap"), 6),
					rec(orders, "o4", s("c1|mug"), 7), rec(orders, "o5", s("c9|box"), 8),
					rec(customers, "c2", s("Bob B."), 9), rec(customers, "c3", nil, 10),
					rec(orders, "o1", s("c2|pen"), 11), rec(orders, "o4", nil, 12),
				)
				wantInner := map[string]string{"o1": "Bob B. ordered c2|pen", "o2": "Bob B. ordered c2|ink"}
				wantLeft := map[string]string{
					"o1": "Bob B. ordered c2|pen", "o2": "Bob B. ordered c2|ink",
					"o3": "nobody ordered c3|cap", "o5": "nobody ordered c9|box",
				}

				app, err := weir.New(topo, append([]weir.Option{
					weir.WithBrokers(env.Brokers...),
					weir.WithApplicationID(kafkatest.GroupID(t)),
					weir.WithStateDir(t.TempDir()),
					weir.WithSessionTimeout(6 * time.Second),
					weir.WithHeartbeatInterval(500 * time.Millisecond),
					weir.WithEpochInterval(50 * time.Millisecond),
					weir.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
				}, mode.opts...)...)
				require.NoError(t, err)
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				defer cancel()
				done := make(chan error, 1)
				go func() { done <- app.Run(ctx) }()

				// final returns each key's last value on topic; a
				// tombstone removes the key.
				final := func(topic string) map[string]string {
					out := map[string]string{}
					for _, recs := range kafkatest.ReadCommittedPartitions(t, env, topic) {
						for _, r := range recs {
							if r.Value == nil {
								delete(out, string(r.Key))
							} else {
								out[string(r.Key)] = string(r.Value)
							}
						}
					}
					return out
				}
				if mode.name == "micro-batch" {
					require.NoError(t, <-done, "AvailableNow ends by itself")
				} else {
					require.Eventually(t, func() bool {
						return equalMaps(final(inner), wantInner) && equalMaps(final(left), wantLeft)
					}, 2*time.Minute, 250*time.Millisecond, "the joins never converged")
					cancel()
					require.NoError(t, <-done)
				}
				require.Equal(t, wantInner, final(inner))
				require.Equal(t, wantLeft, final(left))
			})
		})
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
