package tests

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/microbatch"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
	"github.com/weirstream/weir/topologytest"
)

// statefulTopology uses a window store, a session store and a key-value
// store: per-user clicks per 10 s window, per-user sessions (gap 5 s), and
// per-user total amount. Outputs are keyed by strings so a reader can fold
// them into tables.
func statefulTopology(t *testing.T, in, windows, sessions, totals string) *topology.Topology {
	t.Helper()
	b := topology.NewBuilder()
	clicks := topology.NewStream(b, in, serde.String(), serde.Int64())
	grouped := clicks.GroupByKey()
	perWindow := topology.WindowedBy(grouped, topology.TumblingWindows(10*time.Second).WithGrace(time.Hour)).
		Count(topology.Materialized("clicks-per-window"))
	topology.SelectKey(perWindow.ToStream(), func(w topology.Windowed[string], _ int64) string { return w.String() }).To(windows)
	perSession := topology.SessionWindowedBy(grouped, topology.SessionWindowsWithGap(5*time.Second).WithGrace(time.Hour)).
		Count(topology.Materialized("sessions"))
	topology.SelectKey(perSession.ToStream(), func(w topology.Windowed[string], _ int64) string { return w.String() }).To(sessions)
	grouped.Reduce(func(a, v int64) int64 { return a + v }, topology.Materialized("totals")).ToStream().To(totals)
	topo, err := b.Build()
	require.NoError(t, err)
	return topo
}

type click struct {
	user   string
	amount int64
	at     time.Time
}

func statefulInput() []click {
	users := []string{"ann", "bob", "cy"}
	var out []click
	at := time.UnixMilli(1_700_000_000_000)
	for i := range 240 {
		// Bursts and pauses, so sessions open, grow and merge.
		step := time.Duration(300+(i*7919)%2500) * time.Millisecond
		if i%37 == 0 {
			step += 6 * time.Second
		}
		at = at.Add(step)
		out = append(out, click{user: users[(i*31)%len(users)], amount: int64(1 + i%9), at: at})
	}
	return out
}

// finalTables folds output topics into their final tables (a tombstone
// deletes its key).
func finalTables(t *testing.T, env *kafkatest.Env, topics ...string) []map[string]int64 {
	t.Helper()
	var out []map[string]int64
	for _, topic := range topics {
		m := map[string]int64{}
		for _, r := range kafkatest.ReadCommitted(t, env, topic) {
			if r.Value == nil {
				delete(m, string(r.Key))
				continue
			}
			n, err := serde.Int64().Deserialize(topic, r.Value)
			require.NoError(t, err)
			m[string(r.Key)] = n
		}
		out = append(out, m)
	}
	return out
}

// Window, session and key-value stores on Badger, in both modes, under
// exactly-once, give the same final tables as the in-memory test driver
// over the same input: the stream result equals the batch result.
func TestStatefulOperatorsMatchTheDriver(t *testing.T) {
	input := statefulInput()
	// The reference.
	d, err := topologytest.New(statefulTopology(t, "in", "w", "s", "t"), topologytest.Config{})
	require.NoError(t, err)
	defer d.Close()
	pipe := topologytest.Input(d, "in", serde.String(), serde.Int64())
	for _, c := range input {
		require.NoError(t, pipe.Pipe(c.user, c.amount, c.at))
	}
	var want []map[string]int64
	for _, topic := range []string{"w", "s", "t"} {
		m, err := topologytest.Output(d, topic, serde.String(), serde.Int64()).ReadKeyValuesToMap()
		require.NoError(t, err)
		tm := map[string]int64{}
		for k, v := range m {
			tm[k.(string)] = v
		}
		require.NotEmpty(t, tm, "reference table %s", topic)
		want = append(want, tm)
	}

	modes := map[string][]weir.Option{
		"continuous":  nil,
		"micro-batch": {weir.WithMicroBatch(microbatch.Config{Trigger: microbatch.AvailableNow(), MaxRecordsPerBatch: 60})},
	}
	for name, modeOpts := range modes {
		t.Run(name, func(t *testing.T) {
			kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
				in, w, s, tot := kafkatest.Topic(t), kafkatest.Topic(t), kafkatest.Topic(t), kafkatest.Topic(t)
				for _, topic := range []string{in, w, s, tot} {
					kafkatest.CreateTopic(t, env, topic, 3)
				}
				var recs []kafka.Record
				for _, c := range input {
					v, _ := serde.Int64().Serialize(in, c.amount)
					recs = append(recs, kafka.Record{Topic: in, Partition: kafka.PartitionByKey, Key: []byte(c.user), Value: v, Timestamp: c.at})
				}
				kafkatest.Produce(t, env, recs...)
				topo := statefulTopology(t, in, w, s, tot)
				opts := append([]weir.Option{weir.WithGuarantee(weir.ExactlyOnce)}, modeOpts...)
				if name == "micro-batch" {
					app, err := weir.New(topo, append(baseOptions(t, env, kafkatest.GroupID(t)), opts...)...)
					require.NoError(t, err)
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
					defer cancel()
					require.NoError(t, app.Run(ctx), "AvailableNow ends by itself")
				} else {
					inst := startInstance(t, topo, env, kafkatest.GroupID(t), opts...)
					defer func() { require.NoError(t, inst.stop(t)) }()
				}
				var got []map[string]int64
				require.Eventually(t, func() bool {
					got = finalTables(t, env, w, s, tot)
					for i := range want {
						if !maps.Equal(want[i], got[i]) {
							return false
						}
					}
					return true
				}, 60*time.Second, 250*time.Millisecond, "final tables differ from the driver's")
				require.Len(t, got[1], len(want[1]), fmt.Sprint("sessions: ", got[1]))
			})
		})
	}
}
