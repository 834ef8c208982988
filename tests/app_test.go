package tests

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

func wordCountTopology(t *testing.T, in, out string) *topology.Topology {
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

// instance is one running App.
type instance struct {
	app    *weir.App
	cancel context.CancelFunc
	done   chan error
}

// baseOptions are the options every test instance uses: its own state
// dir, short group timeouts, 50 ms epochs.
func baseOptions(t *testing.T, env *kafkatest.Env, appID string) []weir.Option {
	return []weir.Option{
		weir.WithBrokers(env.Brokers...),
		weir.WithApplicationID(appID),
		weir.WithStateDir(t.TempDir()),
		weir.WithSessionTimeout(6 * time.Second),
		weir.WithHeartbeatInterval(500 * time.Millisecond),
		weir.WithEpochInterval(50 * time.Millisecond),
		weir.WithLogger(testLogger()),
	}
}

func startInstance(t *testing.T, topo *topology.Topology, env *kafkatest.Env, appID string, opts ...weir.Option) *instance {
	t.Helper()
	app, err := weir.New(topo, append(baseOptions(t, env, appID), opts...)...)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{app: app, cancel: cancel, done: make(chan error, 1)}
	go func() { in.done <- app.Run(ctx) }()
	return in
}

// stop stops the instance gracefully and returns Run's result.
func (in *instance) stop(t *testing.T) error {
	t.Helper()
	return in.stopWithin(t, 60*time.Second)
}

// stopWithin stops the instance gracefully and returns Run's result,
// failing t if Run has not returned within d.
func (in *instance) stopWithin(t *testing.T, d time.Duration) error {
	t.Helper()
	in.cancel()
	select {
	case err := <-in.done:
		return err
	case <-time.After(d):
		t.Fatalf("instance did not stop within %v", d)
		return nil
	}
}

// produceLines writes n lines of random words from vocab, keyed by line
// number, and returns how often each word occurs.
func produceLines(t *testing.T, env *kafkatest.Env, topic string, first, n int, vocab []string, want map[string]int64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(first), 7))
	recs := make([]kafka.Record, n)
	for i := range recs {
		words := make([]string, 1+rng.IntN(6))
		for j := range words {
			words[j] = vocab[rng.IntN(len(vocab))]
			want[words[j]]++
		}
		recs[i] = kafka.Record{
			Topic: topic, Partition: kafka.PartitionByKey,
			Key: []byte(strconv.Itoa(first + i)), Value: []byte(strings.Join(words, " ")),
			Timestamp: time.UnixMilli(int64(1_000_000 + first + i)),
		}
	}
	kafkatest.Produce(t, env, recs...)
}

// countsSeen reads the output topic: for each word, the sequence of counts
// written, in order.
func countsSeen(t *testing.T, env *kafkatest.Env, topic string) map[string][]int64 {
	t.Helper()
	seen := map[string][]int64{}
	for _, r := range kafkatest.ReadCommitted(t, env, topic) {
		n, err := serde.Int64().Deserialize(topic, r.Value)
		require.NoError(t, err)
		seen[string(r.Key)] = append(seen[string(r.Key)], n)
	}
	return seen
}

func waitForCounts(t *testing.T, env *kafkatest.Env, topic string, want map[string]int64) map[string][]int64 {
	t.Helper()
	// The counts must keep moving: a loaded machine (the race detector,
	// CI's two cores) may take minutes, a stuck instance never gets there.
	// It fails after stall without a new count, or after 10 minutes.
	const stall = 90 * time.Second
	var seen map[string][]int64
	progress, lastMove, deadline := -1, time.Now(), time.Now().Add(10*time.Minute)
	for {
		seen = countsSeen(t, env, topic)
		done, n := true, 0
		for w, want := range want {
			s := seen[w]
			n += len(s)
			if len(s) == 0 || s[len(s)-1] != want {
				done = false
			}
		}
		if done {
			return seen
		}
		if n > progress {
			progress, lastMove = n, time.Now()
		}
		if now := time.Now(); now.Sub(lastMove) > stall || now.After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Errorf("final counts never appeared: no new count for %v (or 10 minutes in all)", stall)
	for w, n := range want {
		if s := seen[w]; len(s) == 0 || s[len(s)-1] != n {
			t.Logf("word %s: want final count %d, saw %v", w, n, s)
		}
	}
	// Show where every goroutine of the instances in this process is.
	_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
	t.FailNow()
	return nil
}

// Three instances of one application share 8 partitions. One stops
// gracefully halfway, once the group is stable; the other two take its
// partitions — and its counts, restored from the changelog. With no crash
// the result is exact under both guarantees: every word's counts in the
// output, read read_committed, are 1, 2, ..., n, each once.
func TestThreeInstancesShareAndHandOverPartitions(t *testing.T) {
	kafkatest.Long(t) // three instances, both guarantees: .ci/run runs it (WEIR_LONG_TESTS=1)
	for _, g := range []weir.Guarantee{weir.AtLeastOnce, weir.ExactlyOnce} {
		t.Run(g.String(), func(t *testing.T) {
			kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
				testHandOver(t, env, weir.WithGuarantee(g))
			})
		})
	}
}

func testHandOver(t *testing.T, env *kafkatest.Env, opts ...weir.Option) {
	in, out := kafkatest.Topic(t), kafkatest.Topic(t)
	kafkatest.CreateTopic(t, env, in, 8)
	kafkatest.CreateTopic(t, env, out, 8)
	appID := kafkatest.GroupID(t)
	topo := wordCountTopology(t, in, out)
	vocab := make([]string, 40)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%02d", i)
	}
	want := map[string]int64{}

	instances := []*instance{
		startInstance(t, topo, env, appID, opts...),
		startInstance(t, topo, env, appID, opts...),
		startInstance(t, topo, env, appID, opts...),
	}
	var stopOnce sync.Once
	stopAll := func() {
		stopOnce.Do(func() {
			for _, inst := range instances[1:] {
				require.NoError(t, inst.stop(t))
			}
		})
	}
	t.Cleanup(stopAll)

	produceLines(t, env, in, 0, 300, vocab, want)
	waitForCounts(t, env, out, want)
	// The stop comes once the three share the partitions: one stopped
	// while the group still rebalanced (the counts can all be out before
	// the others joined) could not commit its last offsets, the
	// generation having moved on, and its successors counted them again
	// — at-least-once, and seen here about once in 150 runs under load.
	require.Eventually(t, func() bool { return kafkatest.GroupSettled(t, env, appID, 3) },
		90*time.Second, 100*time.Millisecond, "the three instances never shared the partitions")

	require.NoError(t, instances[0].stop(t), "graceful stop")
	produceLines(t, env, in, 300, 300, vocab, want)
	seen := waitForCounts(t, env, out, want)
	stopAll()
	requireExact(t, want, seen)
}

func TestNewValidatesOptions(t *testing.T) {
	topo := wordCountTopology(t, "in", "out")
	_, err := weir.New(topo, weir.WithApplicationID("a"))
	require.ErrorIs(t, err, weir.ErrConfig)
	_, err = weir.New(topo, weir.WithBrokers("localhost:9092"))
	require.ErrorIs(t, err, weir.ErrConfig)
	_, err = weir.New(topo, weir.WithBrokers("localhost:9092"), weir.WithApplicationID("a"), weir.WithSASL("GSSAPI", "u", "p"))
	require.ErrorIs(t, err, weir.ErrConfig)
	_, err = weir.New(nil)
	require.ErrorIs(t, err, weir.ErrConfig)
}

// testLogger discards logs unless WEIR_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("WEIR_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// A stop that arrives while an instance is still starting (topics, the
// transactional producer's init, the group join) is a graceful stop: Run
// returns nil, not the cancelled request's error.
func TestStopWhileStartingIsGraceful(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		in, out := kafkatest.Topic(t), kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, in, 2)
		kafkatest.CreateTopic(t, env, out, 2)
		topo := wordCountTopology(t, in, out)
		for _, g := range []weir.Guarantee{weir.AtLeastOnce, weir.ExactlyOnce} {
			for _, mode := range []weir.Mode{weir.Continuous, weir.MicroBatch} {
				for _, d := range []time.Duration{0, time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond, 200 * time.Millisecond} {
					app, err := weir.New(topo, append(baseOptions(t, env, kafkatest.GroupID(t)),
						weir.WithGuarantee(g), weir.WithMode(mode))...)
					require.NoError(t, err)
					ctx, cancel := context.WithTimeout(context.Background(), d)
					err = app.Run(ctx)
					cancel()
					require.NoError(t, err, "%s %s stopped after %s", mode, g, d)
				}
			}
		}
	})
}
