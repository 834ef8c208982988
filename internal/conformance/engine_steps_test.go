package conformance_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/conformance"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/topology"
)

// TestContinuousEngineStepByStep runs every script through the continuous
// engine one input record at a time: each script's next record is produced
// only once the group has committed every record before it, on the input
// and the repartition topics, so the engine sees the script's order even
// across two input topics (the joins) — and the outputs seen after each
// step must be the ones topologytest gives after that input, on each of
// the script's output topics.
//
// Before a step at which any script restarts ("restart": true), the
// application stops gracefully and a new one starts with the same
// application id, alternately on the same state directory and on an empty
// one (its stores restored from their changelogs). All scripts share the
// application, so topologytest restarts every script at those steps.
func TestContinuousEngineStepByStep(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an application on a broker")
	}
	kafkatest.Long(t) // minutes on a busy machine: CI runs it (WEIR_LONG_TESTS=1)
	if raceEnabled {
		// Every script in one application, one committed step at a time,
		// with restarts: minutes under the race detector. The engines run
		// under it in TestEnginesMatchTopologytest; .ci/run runs this one
		// without it.
		t.Skip("runs without -race (.ci/run's conformance section)")
	}
	paths, err := conformance.Paths("scripts")
	require.NoError(t, err)
	var scripts []*conformance.Script
	steps := 0
	restarts := map[int]bool{} // the steps before which the application restarts
	// A real broker refuses a record stamped more than an hour past its
	// clock (message.timestamp.after.max.ms, Kafka 3.6+): with
	// KAFKA_BROKERS set, scripts stamped that far ahead are left out here;
	// the embedded broker runs them whenever KAFKA_BROKERS is unset, and
	// TestScripts and the oracle always do.
	horizon := time.Now().Add(time.Hour).UnixMilli()
	for _, p := range paths {
		s, err := conformance.Load(p)
		require.NoError(t, err)
		if len(kafkatest.RealBrokers()) > 0 && slices.ContainsFunc(s.Inputs, func(in conformance.Input) bool { return in.TS > horizon }) {
			t.Logf("%s: stamped more than an hour ahead; left out with KAFKA_BROKERS set", p)
			continue
		}
		scripts = append(scripts, s)
		steps = max(steps, len(s.Inputs))
		for i, in := range s.Inputs {
			restarts[i] = restarts[i] || in.Restart
		}
	}
	require.NotEmpty(t, scripts)
	want := make([][]conformance.Output, len(scripts))
	for i, s := range scripts {
		want[i], err = conformance.RunWeirRestartingAt(s, func(step int) bool { return restarts[step] })
		require.NoError(t, err, s.Path)
	}

	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		base := kafkatest.Topic(t)
		appID := kafkatest.GroupID(t)
		b := topology.NewBuilder()
		decoders := make([]conformance.Decoder, len(scripts))
		var names []string // every script's input and output topics
		for i, s := range scripts {
			prefix := fmt.Sprintf("%s-%d-", base, i)
			decoders[i], err = conformance.Build(b, s, prefix)
			require.NoError(t, err, s.Path)
			topics := map[string]bool{}
			for _, out := range s.OutputTopics() {
				topics[out] = true
			}
			for _, in := range s.Inputs {
				topics[topicOf(in)] = true
			}
			for topic := range topics {
				names = append(names, prefix+topic)
			}
		}
		kafkatest.CreateTopics(t, env, names, 1)
		topo, err := b.Build()
		require.NoError(t, err)
		var sources []string // every topic the application reads, resolved
		for _, st := range topo.Graph().Subtopologies {
			for _, ref := range st.SourceTopics() {
				sources = append(sources, ref.Resolve(appID))
			}
		}

		globals := map[string]bool{} // the global tables' topics, which no group member reads
		for _, topic := range topo.GlobalTopics() {
			globals[topic] = true
		}

		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		// start runs a new application on dir; stop stops it gracefully.
		var app *weir.App
		var stop func()
		start := func(dir string) {
			app, err = weir.New(topo,
				weir.WithBrokers(env.Brokers...),
				weir.WithApplicationID(appID),
				weir.WithStateDir(dir),
				weir.WithSessionTimeout(6*time.Second),
				weir.WithHeartbeatInterval(500*time.Millisecond),
				weir.WithEpochInterval(20*time.Millisecond),
				weir.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
			)
			require.NoError(t, err)
			appCtx, appCancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- app.Run(appCtx) }()
			stop = func() {
				appCancel()
				require.NoError(t, <-done)
			}
		}
		dir := t.TempDir()
		start(dir)

		cl, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...))
		require.NoError(t, err)
		defer cl.Close()

		got := make([][]conformance.Output, len(scripts))
		seen := make([]map[string]int, len(scripts)) // records read, by output topic
		for i := range seen {
			seen[i] = map[string]int{}
		}
		globalRecords := int64(0)
		globalBase := int64(0) // global records the running application had read when it started
		nRestarts := 0
		for step := 0; step < steps; step++ {
			if restarts[step] {
				stop()
				// Every other restart on an empty state directory: the
				// stores come back from their changelogs, the global
				// tables from their topics (read again from the start).
				if nRestarts%2 == 1 {
					dir = t.TempDir()
					globalBase = 0
				} else {
					globalBase = globalRecords
				}
				nRestarts++
				start(dir)
			}
			var recs []kafka.Record
			for i, s := range scripts {
				if step < len(s.Inputs) {
					in := s.Inputs[step]
					k, v := in.Bytes()
					topic := fmt.Sprintf("%s-%d-%s", base, i, topicOf(in))
					recs = append(recs, kafka.Record{Topic: topic, Partition: 0, Key: k, Value: v, Timestamp: time.UnixMilli(in.TS),
						Headers: conformance.InputHeaders[kafka.Header](in)})
					if globals[topic] {
						globalRecords++
					}
				}
			}
			kafkatest.Produce(t, env, recs...)
			stepStart := time.Now()
			require.Eventually(t, func() bool { return caughtUp(t, ctx, cl, env, appID, sources) },
				time.Minute, 20*time.Millisecond, "step %d: the application never committed every input", step)
			t.Logf("step %d: caught up in %v", step, time.Since(stepStart))
			// A global table's records are read by the global reader, not
			// the group: wait until they are in its store.
			require.Eventually(t, func() bool { return app.Stats().GlobalRead >= globalRecords-globalBase },
				time.Minute, 20*time.Millisecond, "step %d: the global reader never read every record", step)
			for i, s := range scripts {
				for _, topic := range s.OutputTopics() {
					all := kafkatest.ReadCommitted(t, env, fmt.Sprintf("%s-%d-%s", base, i, topic))
					for _, r := range all[seen[i][topic]:] {
						k, v, err := decoders[i](r.Key, r.Value)
						require.NoError(t, err)
						got[i] = append(got[i], conformance.Output{After: step, Topic: topic, Key: k, Value: v,
							TS: r.Timestamp.UnixMilli(), Headers: conformance.OutputHeaders(r.Headers)})
					}
					seen[i][topic] = len(all)
				}
			}
		}
		stop()
		for i, s := range scripts {
			if d := conformance.Diff(want[i], got[i]); d != "" {
				t.Errorf("%s: the continuous engine differs from topologytest:\n%s", s.Path, d)
			}
		}
	})
}

// caughtUp reports whether group has committed the end offset of partition
// 0 of every topic, asking cl.
func caughtUp(t *testing.T, ctx context.Context, cl *kgo.Client, env *kafkatest.Env, group string, topics []string) bool {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = group
	req.Groups = append(req.Groups, g)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		return false
	}
	committed := map[string]int64{}
	for _, rt := range resp.Groups[0].Topics {
		for _, p := range rt.Partitions {
			if p.Partition == 0 && p.ErrorCode == 0 {
				committed[rt.Topic] = p.Offset
			}
		}
	}
	// One ListOffsets for every topic's partition 0 (kgo sends each
	// partition to its leader): the end offsets to compare with.
	lo := kmsg.NewPtrListOffsetsRequest()
	for _, topic := range topics {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = 0
		rp.Timestamp = -1 // the end
		rt.Partitions = append(rt.Partitions, rp)
		lo.Topics = append(lo.Topics, rt)
	}
	ends, err := lo.RequestWith(ctx, cl)
	if err != nil {
		return false
	}
	found := 0
	for _, rt := range ends.Topics {
		for _, p := range rt.Partitions {
			if p.ErrorCode != 0 {
				return false
			}
			if p.Offset > 0 && committed[rt.Topic] < p.Offset {
				return false
			}
			found++
		}
	}
	return found == len(topics)
}

// topicOf is the input's topic, "in" by default.
func topicOf(in conformance.Input) string {
	if in.Topic == "" {
		return "in"
	}
	return in.Topic
}
