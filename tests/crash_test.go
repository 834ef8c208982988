package tests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore/badgerstore"
)

// Crash tests run instances as child processes — this test binary again,
// running TestCrashChild — and kill them with SIGKILL in the middle of
// their epochs or batches. Only the Kafka broker and the state dirs
// outlive them.

const crashChildEnv = "WEIR_CRASH_CHILD"

// TestCrashChild is the child process: a word-count instance configured by
// the environment, running until killed (or, on SIGTERM, stopped
// gracefully). It is skipped in a normal test run.
func TestCrashChild(t *testing.T) {
	if os.Getenv(crashChildEnv) == "" {
		t.Skip("child process of the crash tests")
	}
	env := func(k string) string { return os.Getenv("WEIR_CHILD_" + k) }
	opts := childOptions(env)
	if env("GUARANTEE") == "at-least-once" {
		opts = append(opts, weir.WithGuarantee(weir.AtLeastOnce))
	}
	if d, err := time.ParseDuration(env("EPOCH")); err == nil {
		opts = append(opts, weir.WithEpochInterval(d))
	}
	if d, err := time.ParseDuration(env("SESSION")); err == nil {
		opts = append(opts, weir.WithSessionTimeout(d))
	}
	if n, err := strconv.Atoi(env("STANDBYS")); err == nil {
		opts = append(opts, weir.WithStandbyReplicas(n))
	}
	if addr := env("HTTP"); addr != "" {
		opts = append(opts, weir.WithHTTP(addr))
	}
	app, err := weir.New(wordCountTopology(t, env("IN"), env("OUT")), opts...)
	require.NoError(t, err)
	ctx, stop := signalContext()
	defer stop()
	require.NoError(t, app.Run(ctx))
}

// childOptions are a child instance's options from its environment
// (env("BROKERS"), "APP", "STATE_DIR", "MODE"): exactly-once, short
// session timeouts, micro-batches of 50 records in micro-batch mode.
func childOptions(env func(string) string) []weir.Option {
	return withMode(env("MODE"),
		weir.WithBrokers(strings.Split(env("BROKERS"), ",")...),
		weir.WithApplicationID(env("APP")),
		weir.WithStateDir(env("STATE_DIR")),
		weir.WithGuarantee(weir.ExactlyOnce),
		weir.WithSessionTimeout(3*time.Second),
		weir.WithHeartbeatInterval(300*time.Millisecond),
		weir.WithLogger(testLogger()))
}

// child is a running child instance.
type child struct {
	cmd    *exec.Cmd
	done   chan error
	exited bool
	err    error
}

// wait waits up to d for the child to exit and reports whether it did.
func (c *child) wait(d time.Duration) bool {
	if c.exited {
		return true
	}
	select {
	case c.err = <-c.done:
		c.exited = true
	case <-time.After(d):
	}
	return c.exited
}

func startChild(t *testing.T, env *kafkatest.Env, mode, appID, in, out, stateDir string, extraEnv ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		crashChildEnv+"=1",
		"WEIR_CHILD_BROKERS="+strings.Join(env.Brokers, ","),
		"WEIR_CHILD_APP="+appID, "WEIR_CHILD_IN="+in, "WEIR_CHILD_OUT="+out,
		"WEIR_CHILD_STATE_DIR="+stateDir, "WEIR_CHILD_MODE="+mode,
	)
	cmd.Env = append(cmd.Env, extraEnv...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	require.NoError(t, cmd.Start())
	c := &child{cmd: cmd, done: make(chan error, 1)}
	go func() { c.done <- cmd.Wait() }()
	t.Cleanup(func() { c.kill(t) })
	return c
}

// kill sends SIGKILL and reaps the child; it is a no-op once it exited.
func (c *child) kill(t *testing.T) {
	t.Helper()
	if c.exited {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	if !c.wait(10 * time.Second) {
		t.Error("killed child did not exit")
	}
}

// stop sends SIGTERM and expects a clean exit.
func (c *child) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGTERM))
	require.True(t, c.wait(60*time.Second), "child did not stop within 60s")
	require.NoError(t, c.err, "graceful stop")
}

// An instance killed with SIGKILL in the middle of its epochs (or batches)
// and restarted with the same state dir; killed again and replaced by one
// with an empty state dir, which restores from the changelog; killed again
// and replaced by a second instance with its own state dir, which takes
// the partitions over. Every time, under exactly-once, a read_committed
// reader sees each word's counts as 1, 2, ..., n exactly once, and the
// store in the last instance's Badger database equals the recomputation
// from the input.
func TestStateSurvivesSIGKILL(t *testing.T) {
	kafkatest.Long(t)
	if testing.Short() {
		t.Skip("starts child processes")
	}
	for _, mode := range []string{"continuous", "micro-batch"} {
		t.Run(mode, func(t *testing.T) {
			kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
				testSIGKILL(t, env, mode)
			})
		})
	}
}

func testSIGKILL(t *testing.T, env *kafkatest.Env, mode string) {
	in, out := kafkatest.Topic(t), kafkatest.Topic(t)
	kafkatest.CreateTopic(t, env, in, 4)
	kafkatest.CreateTopic(t, env, out, 4)
	appID := kafkatest.GroupID(t)
	vocab := make([]string, 25)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%02d", i)
	}
	want := map[string]int64{}
	dirA, dirB, dirC := t.TempDir(), t.TempDir(), t.TempDir()

	// Kill while records keep coming: some epochs are open at the kill.
	killMidStream := func(c *child, first int) {
		produceLines(t, env, in, first, 150, vocab, want)
		time.Sleep(300 * time.Millisecond)
		produceLines(t, env, in, first+150, 150, vocab, want)
		c.kill(t)
	}

	a := startChild(t, env, mode, appID, in, out, dirA)
	killMidStream(a, 0)
	a = startChild(t, env, mode, appID, in, out, dirA) // same state dir
	requireExact(t, want, waitForCounts(t, env, out, want))

	killMidStream(a, 300)
	b := startChild(t, env, mode, appID, in, out, dirB) // empty state dir
	requireExact(t, want, waitForCounts(t, env, out, want))

	killMidStream(b, 600)
	c := startChild(t, env, mode, appID, in, out, dirC) // the partitions move here
	produceLines(t, env, in, 900, 100, vocab, want)
	requireExact(t, want, waitForCounts(t, env, out, want))
	c.stop(t)

	// The committed state in Badger equals the recomputation.
	db, err := badgerstore.Open(filepath.Join(dirC, "stores"), badgerstore.Options{ReadOnly: true})
	require.NoError(t, err)
	defer db.Close()
	for w, n := range want {
		found := false
		for p := int32(0); p < 4 && !found; p++ {
			v, ok, err := db.Get("counts", p, []byte(w))
			require.NoError(t, err)
			if ok {
				got, err := serde.Int64().Deserialize("counts", v)
				require.NoError(t, err)
				require.Equal(t, n, got, "store value of %s", w)
				found = true
			}
		}
		require.True(t, found, "word %s is in the store", w)
	}
}

// signalContext is cancelled by SIGTERM or SIGINT.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
}

// A member stalled (SIGSTOP) in the middle of its epochs, past its session
// timeout and its transaction timeout: the group gives its partitions to
// another instance, the broker aborts its open transaction. When it wakes
// (SIGCONT) its late commit is fenced and it rewinds; none of its stalled
// epoch's records is ever visible: every word's counts are still 1, 2, ...,
// n, exactly once, for a read_committed reader.
func TestStalledMemberIsFenced(t *testing.T) {
	kafkatest.Long(t)
	if testing.Short() {
		t.Skip("starts child processes")
	}
	if raceEnabled {
		// The woken member's transactional batches fail (fenced), and
		// sarama v1.61.1 races with itself on that path
		// (transactionManager.transitionTo via asyncProducer.retryBatch
		// against publishTxnPartitions); the race detector in the child
		// then fails it whatever weir does. Runs without -race (and the
		// chaos suite stalls members on both brokers).
		t.Skip("sarama's own data race on failed transactional batches (see comment)")
	}
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		in, out := kafkatest.Topic(t), kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, in, 4)
		kafkatest.CreateTopic(t, env, out, 4)
		appID := kafkatest.GroupID(t)
		vocab := []string{"ash", "elm", "fir", "oak", "yew"}
		want := map[string]int64{}

		a := startChild(t, env, "continuous", appID, in, out, t.TempDir())
		produceLines(t, env, in, 0, 100, vocab, want)
		waitForCounts(t, env, out, want)

		var b *child
		stallAndWake(t, env, a, in, out, vocab, want, func() {
			b = startChild(t, env, "continuous", appID, in, out, t.TempDir())
		})
		a.stop(t)
		b.stop(t)
	})
}

// stallAndWake stalls a (SIGSTOP) while lines 100 to 299 are produced,
// so that epochs are open in the stall, and calls during while it is
// stalled; once every count is seen it wakes a (SIGCONT), produces lines
// 300 to 399 and checks that the zombie adds nothing: each count once for
// a read_committed reader, also after time for a late, fenced commit.
func stallAndWake(t *testing.T, env *kafkatest.Env, a *child, in, out string, vocab []string, want map[string]int64, during func()) {
	t.Helper()
	produceLines(t, env, in, 100, 100, vocab, want)
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGSTOP))
	produceLines(t, env, in, 200, 100, vocab, want)
	during()
	requireExact(t, want, waitForCounts(t, env, out, want))

	require.NoError(t, a.cmd.Process.Signal(syscall.SIGCONT))
	produceLines(t, env, in, 300, 100, vocab, want)
	requireExact(t, want, waitForCounts(t, env, out, want))
	time.Sleep(2 * time.Second) // time for a late, fenced commit to land if it could
	requireExact(t, want, countsSeen(t, env, out))
}

// Under at-least-once nothing fences a member stalled past its session
// timeout: when it wakes up it still holds an open epoch of state changes.
// It must not write them to the changelog after its successor's records
// (a restore would take the store back in time): it asks the coordinator
// first, learns it was removed, drops the epoch and rejoins. The changelog
// then holds non-decreasing writer generations on every partition, and the
// counts stay right.
func TestStalledMemberWritesNoStaleChangelog(t *testing.T) {
	kafkatest.Long(t)
	if testing.Short() {
		t.Skip("starts child processes")
	}
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		in, out := kafkatest.Topic(t), kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, in, 4)
		kafkatest.CreateTopic(t, env, out, 4)
		appID := kafkatest.GroupID(t)
		vocab := []string{"ash", "elm", "fir", "oak", "yew"}
		want := map[string]int64{}
		// a has long epochs, so that the stall surely catches one open; its
		// successor b commits every 100 ms, so its changelog records come
		// before anything a could write when it wakes up.
		a := startChild(t, env, "continuous", appID, in, out, t.TempDir(), "WEIR_CHILD_GUARANTEE=at-least-once", "WEIR_CHILD_EPOCH=10s")
		produceLines(t, env, in, 0, 100, vocab, want)
		waitForCountsAtLeast(t, env, out, want)
		produceLines(t, env, in, 100, 100, vocab, want)
		time.Sleep(500 * time.Millisecond) // processed, not yet committed
		require.NoError(t, a.cmd.Process.Signal(syscall.SIGSTOP))
		b := startChild(t, env, "continuous", appID, in, out, t.TempDir(), "WEIR_CHILD_GUARANTEE=at-least-once")
		produceLines(t, env, in, 200, 100, vocab, want)
		waitForCountsAtLeast(t, env, out, want)
		time.Sleep(time.Second) // b's epochs commit

		require.NoError(t, a.cmd.Process.Signal(syscall.SIGCONT))
		time.Sleep(3 * time.Second) // time for the woken member's epoch end
		produceLines(t, env, in, 300, 100, vocab, want)
		waitForCountsAtLeast(t, env, out, want)
		a.stop(t)
		b.stop(t)

		changelog := processor.ChangelogTopic("counts").Resolve(appID)
		for p, recs := range kafkatest.ReadCommittedPartitions(t, env, changelog) {
			newest := int32(0)
			for _, rec := range recs {
				g, ok := tasks.WriterOf(rec.Headers)
				require.True(t, ok, "changelog record %d@%d has no writer generation", p, rec.Offset)
				require.GreaterOrEqual(t, g, newest, "changelog record %d@%d (%s=%x) of writer generation %d after one of %d: the replaced member wrote",
					p, rec.Offset, rec.Key, rec.Value, g, newest)
				newest = g
			}
		}
	})
}

// waitForCountsAtLeast waits until every word's last count is at least
// want's: under at-least-once a stalled member's records may be counted
// twice (its words reached the repartition topic, its input offsets were
// not committed).
func waitForCountsAtLeast(t *testing.T, env *kafkatest.Env, topic string, want map[string]int64) {
	t.Helper()
	require.Eventually(t, func() bool {
		seen := countsSeen(t, env, topic)
		for w, n := range want {
			s := seen[w]
			if len(s) == 0 || s[len(s)-1] < n {
				return false
			}
		}
		return true
	}, 90*time.Second, 250*time.Millisecond, "counts never reached the input's")
}
