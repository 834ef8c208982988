package conformance_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/conformance"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/microbatch"
	"github.com/weirstream/weir/topology"
)

// TestEnginesMatchTopologytest runs the scripts with one input topic
// through the real engines — continuous and micro-batch, on the embedded
// broker (and on KAFKA_BROKERS when set) — all in one application, and
// checks that every script's output topics hold what topologytest gives:
// the same keys, values and timestamps in the same order. (Scripts with two
// input topics are left out: which topic's record an engine reads first
// depends on fetches, so their output order is not the script's.)
func TestEnginesMatchTopologytest(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two applications on a broker")
	}
	kafkatest.Long(t) // minutes on a busy machine: CI runs it (WEIR_LONG_TESTS=1)
	paths, err := conformance.Paths("scripts")
	require.NoError(t, err)
	var scripts []*conformance.Script
	var want [][]conformance.Output
	for _, p := range paths {
		s, err := conformance.Load(p)
		require.NoError(t, err)
		single := true
		for _, in := range s.Inputs {
			single = single && (in.Topic == "" || in.Topic == "in")
		}
		if !single {
			continue
		}
		// The application here runs without restarts: a script's
		// restarts are left out (TestContinuousEngineStepByStep makes them).
		outs, err := conformance.RunWeirRestartingAt(s, func(int) bool { return false })
		require.NoError(t, err, p)
		scripts, want = append(scripts, s), append(want, outs)
	}
	require.GreaterOrEqual(t, len(scripts), 30)

	modes := []struct {
		name string
		opts []weir.Option
	}{
		{"continuous", nil},
		{"micro-batch", []weir.Option{weir.WithMicroBatch(microbatch.Config{Trigger: microbatch.AvailableNow(), MaxRecordsPerBatch: 7})}},
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
				base := kafkatest.Topic(t)
				b := topology.NewBuilder()
				decoders := make([]conformance.Decoder, len(scripts))
				var recs []kafka.Record
				for i, s := range scripts {
					prefix := fmt.Sprintf("%s-%d-", base, i)
					decoders[i], err = conformance.Build(b, s, prefix)
					require.NoError(t, err, s.Path)
					kafkatest.CreateTopic(t, env, prefix+"in", 1)
					for _, out := range s.OutputTopics() {
						kafkatest.CreateTopic(t, env, prefix+out, 1)
					}
					for _, in := range s.Inputs {
						k, v := in.Bytes()
						recs = append(recs, kafka.Record{Topic: prefix + "in", Partition: 0, Key: k, Value: v, Timestamp: time.UnixMilli(in.TS), Headers: conformance.InputHeaders[kafka.Header](in)})
					}
				}
				topo, err := b.Build()
				require.NoError(t, err)
				kafkatest.Produce(t, env, recs...)

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

				read := func() [][]conformance.Output {
					got := make([][]conformance.Output, len(scripts))
					for i, s := range scripts {
						for _, topic := range s.OutputTopics() {
							for _, r := range kafkatest.ReadCommitted(t, env, fmt.Sprintf("%s-%d-%s", base, i, topic)) {
								k, v, err := decoders[i](r.Key, r.Value)
								require.NoError(t, err)
								got[i] = append(got[i], conformance.Output{Topic: topic, Key: k, Value: v, TS: r.Timestamp.UnixMilli(), Headers: conformance.OutputHeaders(r.Headers)})
							}
						}
					}
					return got
				}
				complete := func(got [][]conformance.Output) bool {
					for i := range got {
						if len(got[i]) < len(want[i]) {
							return false
						}
					}
					return true
				}
				var got [][]conformance.Output
				if mode.name == "micro-batch" {
					require.NoError(t, <-done, "AvailableNow ends by itself")
					got = read()
				} else {
					require.Eventually(t, func() bool { got = read(); return complete(got) },
						2*time.Minute, 250*time.Millisecond, "the engine never wrote every output")
					cancel()
					require.NoError(t, <-done)
					got = read()
				}
				for i, s := range scripts {
					// An engine's outputs are not tied to an input: compare
					// each output topic's records, topic after topic.
					var exp []conformance.Output
					for _, topic := range s.OutputTopics() {
						for _, o := range want[i] {
							if o.Topic == topic {
								o.After = 0
								exp = append(exp, o)
							}
						}
					}
					if d := conformance.Diff(exp, got[i]); d != "" {
						t.Errorf("%s: the %s engine differs from topologytest:\n%s", s.Path, mode.name, d)
					}
				}
			})
		})
	}
}
