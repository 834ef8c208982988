package microbatch_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/microbatch"
	"github.com/weirstream/weir/offsets"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
	"github.com/weirstream/weir/topologytest"
)

func wordCount(t *testing.T, in, out string) *topology.Topology {
	t.Helper()
	b := topology.NewBuilder()
	lines := topology.NewStream(b, in, serde.String(), serde.String())
	words := topology.FlatMapValues(lines, strings.Fields)
	topology.GroupBy(words, func(_, w string) string { return w }, topology.Named("words")).
		Count(topology.Materialized("counts")).
		ToStream().To(out)
	topo, err := b.Build()
	require.NoError(t, err)
	return topo
}

// lines returns n deterministic lines over a small vocabulary.
func lines(n int) []string {
	out := make([]string, n)
	for i := range out {
		var ws []string
		for j := 0; j <= i%5; j++ {
			ws = append(ws, fmt.Sprintf("w%d", (i*7+j*3)%23))
		}
		out[i] = strings.Join(ws, " ")
	}
	return out
}

func produce(t *testing.T, env *kafkatest.Env, topic string, ls []string) {
	t.Helper()
	recs := make([]kafka.Record, len(ls))
	for i, l := range ls {
		recs[i] = kafka.Record{Topic: topic, Partition: kafka.PartitionByKey, Key: []byte(strconv.Itoa(i)),
			Value: []byte(l), Timestamp: time.UnixMilli(int64(1_000_000 + i))}
	}
	kafkatest.Produce(t, env, recs...)
}

// finalTable reads a counts topic into its final table (the last value per
// key).
func finalTable(t *testing.T, env *kafkatest.Env, topic string) map[string]int64 {
	t.Helper()
	table := map[string]int64{}
	for _, r := range kafkatest.ReadCommitted(t, env, topic) {
		n, err := serde.Int64().Deserialize(topic, r.Value)
		require.NoError(t, err)
		table[string(r.Key)] = n
	}
	return table
}

func options(env *kafkatest.Env, appID, stateDir string, extra ...weir.Option) []weir.Option {
	return append([]weir.Option{
		weir.WithBrokers(env.Brokers...),
		weir.WithApplicationID(appID),
		weir.WithStateDir(stateDir),
		weir.WithSessionTimeout(6 * time.Second),
		weir.WithHeartbeatInterval(500 * time.Millisecond),
		weir.WithLogger(slog.New(slog.DiscardHandler)),
	}, extra...)
}

// wantCounts is the word count's final table over input, from the same
// topology in memory (the reference).
func wantCounts(t *testing.T, in string, input []string) map[string]int64 {
	t.Helper()
	d, err := topologytest.New(wordCount(t, in, "ref"), topologytest.Config{})
	require.NoError(t, err)
	defer d.Close()
	pipe := topologytest.Input(d, in, serde.String(), serde.String())
	for i, l := range input {
		require.NoError(t, pipe.Pipe(strconv.Itoa(i), l, time.UnixMilli(int64(i+1))))
	}
	ref, err := topologytest.Output(d, "ref", serde.String(), serde.Int64()).ReadKeyValuesToMap()
	require.NoError(t, err)
	want := map[string]int64{}
	for k, v := range ref {
		want[k.(string)] = v
	}
	return want
}

// availableNowCount returns an exactly-once word count from in to out
// under the AvailableNow trigger, batches of at most maxRecords (0: no
// limit).
func availableNowCount(t *testing.T, env *kafkatest.Env, in, out, appID, dir string, maxRecords int64) *weir.App {
	t.Helper()
	app, err := weir.New(wordCount(t, in, out), options(env, appID, dir,
		weir.WithGuarantee(weir.ExactlyOnce),
		weir.WithMicroBatch(microbatch.Config{Trigger: microbatch.AvailableNow(), MaxRecordsPerBatch: maxRecords}))...)
	require.NoError(t, err)
	return app
}

// runBounded runs an app whose trigger stops by itself.
func runBounded(t *testing.T, topo *topology.Topology, opts []weir.Option) error {
	t.Helper()
	app, err := weir.New(topo, opts...)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return app.Run(ctx)
}

// The batch job (AvailableNow) and the streaming job (continuous) over the
// same input give the same final table — and both equal the in-memory
// driver's.
func TestAvailableNowEqualsContinuous(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		in, batchOut, streamOut := kafkatest.Topic(t), kafkatest.Topic(t), kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, in, 4)
		kafkatest.CreateTopic(t, env, batchOut, 4)
		kafkatest.CreateTopic(t, env, streamOut, 4)
		input := lines(400)
		produce(t, env, in, input)

		want := wantCounts(t, in, input)

		var progress []microbatch.Progress
		var mu sync.Mutex
		err := runBounded(t, wordCount(t, in, batchOut), options(env, kafkatest.GroupID(t), t.TempDir(),
			weir.WithMicroBatch(microbatch.Config{
				Trigger:            microbatch.AvailableNow(),
				MaxRecordsPerBatch: 150,
				OnProgress: func(p microbatch.Progress) {
					mu.Lock()
					progress = append(progress, p)
					mu.Unlock()
				},
			})))
		require.NoError(t, err)
		require.Equal(t, want, finalTable(t, env, batchOut), "AvailableNow table")

		// The limits cut the input into several batches.
		var rows int64
		for i, p := range progress {
			require.Equal(t, int64(i), p.BatchID)
			require.LessOrEqual(t, p.NumInputRows, int64(150), "batch %d", i)
			rows += p.NumInputRows
		}
		require.Greater(t, len(progress), 3)
		require.Positive(t, rows)

		app, err := weir.New(wordCount(t, in, streamOut), options(env, kafkatest.GroupID(t), t.TempDir())...)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- app.Run(ctx) }()
		require.Eventually(t, func() bool {
			return maps.Equal(want, finalTable(t, env, streamOut))
		}, 60*time.Second, 200*time.Millisecond, "continuous table")
		cancel()
		require.NoError(t, <-done)
	})
}

// A batch that fails after its plan was written and before its offsets
// were committed runs again after a restart with exactly the same ranges
// and batch id, and a ForEachBatch sink sees the same records.
func TestReplayAfterFailureBetweenWALAndCommit(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		in := kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, in, 3)
		produce(t, env, in, lines(90))
		appID, stateDir := kafkatest.GroupID(t), t.TempDir()

		b := topology.NewBuilder()
		topology.MapValues(topology.NewStream(b, in, serde.String(), serde.String()), strings.ToUpper).To("upper")
		topo, err := b.Build()
		require.NoError(t, err)

		type call struct {
			batch   int64
			records []string
		}
		var calls []call
		failFirst := true
		sink := func(_ context.Context, batch int64, recs []microbatch.Record) error {
			var vs []string
			for _, r := range recs {
				vs = append(vs, string(r.Value))
			}
			calls = append(calls, call{batch, vs})
			if failFirst {
				failFirst = false
				return errors.New("crash before commit")
			}
			return nil
		}
		var replays []microbatch.Progress
		cfg := microbatch.Config{
			Trigger: microbatch.Once(), MaxRecordsPerBatch: 40, ForEachBatch: sink,
			OnProgress: func(p microbatch.Progress) { replays = append(replays, p) },
		}
		err = runBounded(t, topo, options(env, appID, stateDir, weir.WithMicroBatch(cfg)))
		require.ErrorContains(t, err, "crash before commit")

		// The plan is in the write-ahead log, without a commit.
		wlog, err := offsets.Open(filepath.Join(stateDir, "offsets"), offsets.Options{})
		require.NoError(t, err)
		wal, err := wlog.Namespace(appID)
		require.NoError(t, err)
		pending, ok, err := wal.Pending()
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, wlog.Close())
		require.Equal(t, int64(0), pending.Batch)

		// Restart: batch 0 runs again, same ranges, same records.
		err = runBounded(t, topo, options(env, appID, stateDir, weir.WithMicroBatch(cfg)))
		require.NoError(t, err)
		require.Len(t, calls, 2)
		require.Equal(t, calls[0], calls[1])
		require.Len(t, calls[0].records, 40)
		require.Len(t, replays, 1)
		require.True(t, replays[0].Replay)
		var got []offsets.Range
		for _, s := range replays[0].Sources {
			got = append(got, offsets.Range{TopicPartition: offsets.TopicPartition{Topic: s.Topic, Partition: s.Partition}, Start: s.StartOffset, End: s.EndOffset})
		}
		require.Equal(t, pending.Ranges, got)

		// A third run goes on with batch 1 from where batch 0 ended.
		calls = nil
		replays = nil
		err = runBounded(t, topo, options(env, appID, stateDir, weir.WithMicroBatch(cfg)))
		require.NoError(t, err)
		require.Len(t, replays, 1)
		require.Equal(t, int64(1), replays[0].BatchID)
		require.False(t, replays[0].Replay)
		for i, s := range replays[0].Sources {
			require.Equal(t, pending.Ranges[i].End, s.StartOffset, "batch 1 starts where batch 0 ended")
		}
	})
}
