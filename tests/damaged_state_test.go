package tests

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/statedir/damagetest"
	"github.com/weirstream/weir/microbatch"
	"github.com/weirstream/weir/offsets"
	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore"
	"github.com/weirstream/weir/topology"
)

// Local state is a cache: an instance stopped, its state dir damaged
// (random bytes in the tables and value logs, those files cut to half,
// the MANIFEST overwritten, the tables deleted) — the store database's and
// the offsets log's both — starts again by itself, sets the damaged
// directories aside with a WARN naming the file and the cause, rebuilds
// the stores from their changelogs and the write-ahead log from the
// committed offsets, and its output, read read_committed, is exact.
//
// One case runs always, on 3,000 lines; the whole matrix (4 damages × 2
// modes × 2 guarantees), on 20,000 lines each, is a long test.
func TestDamagedStateIsRebuilt(t *testing.T) {
	t.Run("truncate/continuous/exactly-once", func(t *testing.T) {
		kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
			testDamagedState(t, env, damagetest.Truncate, weir.Continuous, weir.ExactlyOnce, 3000)
		})
	})
	// Every kind of damage, each in a mode and under a guarantee drawn
	// from the test's seed (WEIR_TEST_SEED replays a run; 16 cases in
	// all, four a run); WEIR_DAMAGE_MATRIX=full runs all of them.
	t.Run("matrix", func(t *testing.T) {
		kafkatest.Long(t)
		rng := rand.New(rand.NewPCG(kafkatest.Seed(t), 0))
		full := os.Getenv("WEIR_DAMAGE_MATRIX") == "full"
		for _, kind := range damagetest.Kinds {
			pick := rng.IntN(4)
			for i, c := range []struct {
				mode weir.Mode
				g    weir.Guarantee
			}{{weir.Continuous, weir.AtLeastOnce}, {weir.Continuous, weir.ExactlyOnce}, {weir.MicroBatch, weir.AtLeastOnce}, {weir.MicroBatch, weir.ExactlyOnce}} {
				if !full && i != pick {
					continue
				}
				t.Run(fmt.Sprintf("%s/%s/%s", kind, c.mode, c.g), func(t *testing.T) {
					kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
						testDamagedState(t, env, kind, c.mode, c.g, 20_000)
					})
				})
			}
		}
	})
}

// testDamagedState runs records input lines, two thirds before the damage
// and a third after.
func testDamagedState(t *testing.T, env *kafkatest.Env, kind string, mode weir.Mode, g weir.Guarantee, records int) {
	in, out := kafkatest.Topic(t), kafkatest.Topic(t)
	kafkatest.CreateTopic(t, env, in, 4)
	kafkatest.CreateTopic(t, env, out, 4)
	appID := kafkatest.GroupID(t)
	topo := wordCountTopology(t, in, out)
	stateDir := t.TempDir()
	var logs lockedBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	opts := []weir.Option{weir.WithStateDir(stateDir), weir.WithGuarantee(g), weir.WithMode(mode), weir.WithLogger(logger)}
	if mode == weir.MicroBatch {
		opts = append(opts, weir.WithMicroBatch(microbatch.Config{MaxRecordsPerBatch: 500}))
	}
	vocab := make([]string, 200)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%03d", i)
	}
	want := map[string]int64{}

	inst := startInstance(t, topo, env, appID, opts...)
	before := records * 2 / 3
	produceLines(t, env, in, 0, before, vocab, want)
	waitForCounts(t, env, out, want)
	require.NoError(t, inst.stop(t))

	changed, err := damagetest.Damage(filepath.Join(stateDir, "stores"), kind, 1)
	require.NoError(t, err)
	t.Logf("damaged stores/%v", changed)
	if changed, err := damagetest.Damage(filepath.Join(stateDir, "offsets"), kind, 2); err == nil {
		t.Logf("damaged offsets/%v", changed)
	}

	rebuiltAt := time.Now()
	inst = startInstance(t, topo, env, appID, opts...)
	produceLines(t, env, in, before, records-before, vocab, want)
	seen := waitForCounts(t, env, out, want)
	require.NoError(t, inst.stop(t), "the instance ran by itself")
	for w, n := range want {
		s := seen[w]
		for i := 1; i < len(s); i++ {
			require.Less(t, s[i-1], s[i], "word %s: counts go up: %v", w, s)
		}
		require.Equal(t, n, s[len(s)-1], "word %s", w)
	}
	if g == weir.ExactlyOnce {
		requireExact(t, want, seen)
	}
	text := logs.String()
	require.Contains(t, text, "state stores damaged; set aside", text)
	require.Contains(t, text, "file="+changed[0], "the WARN names the damaged file:\n%s", text)
	asides, err := filepath.Glob(filepath.Join(stateDir, "stores.damaged-*"))
	require.NoError(t, err)
	require.Len(t, asides, 1, "the damaged database is kept for inspection")
	if mode == weir.MicroBatch && strings.Contains(text, "write-ahead log damaged") {
		// The rebuilt log numbers batches above any id the lost one gave.
		wlog, err := offsets.Open(filepath.Join(stateDir, "offsets"), offsets.Options{Logger: logger})
		require.NoError(t, err)
		defer wlog.Close()
		wal, err := wlog.Namespace(appID)
		require.NoError(t, err)
		last, ok, err := wal.LatestPlan()
		require.NoError(t, err)
		require.True(t, ok)
		require.Greater(t, last.Batch, rebuiltAt.UnixMilli())
	}
}

// lockedBuffer is a bytes.Buffer safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// passThrough forwards its records; it is declared with a store it does
// not use, to give the topology an unlogged store.
type passThrough struct{}

func (passThrough) Process(ctx processor.Context[string, string], r processor.Record[string, string]) error {
	return ctx.Forward(r)
}

// A damaged store database is not rebuilt when a store has no changelog:
// Run fails, naming the dir, the file, the cause and the store, without
// the hint about a second instance — which a lock held by another
// instance does get.
func TestDamagedStateWithAnUnloggedStoreFails(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		in, out := kafkatest.Topic(t), kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, in, 1)
		kafkatest.CreateTopic(t, env, out, 1)
		b := topology.NewBuilder()
		b.AddStore(statestore.Spec{Name: "scratch", Kind: statestore.KindKeyValue})
		lines := topology.NewStream(b, in, serde.String(), serde.String())
		topology.Process(lines, func() processor.Processor[string, string, string, string] { return passThrough{} },
			topology.WithStores("scratch")).To(out)
		topo, err := b.Build()
		require.NoError(t, err)
		stateDir := t.TempDir()
		appID := kafkatest.GroupID(t)

		inst := startInstance(t, topo, env, appID, weir.WithStateDir(stateDir))
		produceLines(t, env, in, 0, 50, []string{"a"}, map[string]int64{})
		require.Eventually(t, func() bool { return len(kafkatest.ReadCommitted(t, env, out)) == 50 }, 60*time.Second, 50*time.Millisecond)

		// Another instance on the same state dir: the lock, and the hint.
		app, err := weir.New(topo, append(baseOptions(t, env, appID), weir.WithStateDir(stateDir))...)
		require.NoError(t, err)
		err = app.Run(context.Background())
		require.ErrorContains(t, err, "a second instance on this machine needs its own state dir")
		require.NoError(t, inst.stop(t))

		_, err = damagetest.Damage(filepath.Join(stateDir, "stores"), damagetest.Manifest, 1)
		require.NoError(t, err)
		app, err = weir.New(topo, append(baseOptions(t, env, appID), weir.WithStateDir(stateDir))...)
		require.NoError(t, err)
		err = app.Run(context.Background())
		require.Error(t, err)
		t.Log(err)
		for _, part := range []string{filepath.Join(stateDir, "stores"), "MANIFEST", "manifest has bad magic", `store "scratch" has no changelog`} {
			require.ErrorContains(t, err, part)
		}
		require.NotContains(t, err.Error(), "second instance")
		require.Equal(t, weir.Failed, app.State().State)
		require.DirExists(t, filepath.Join(stateDir, "stores"), "left where it is")
	})
}

// A state dir left by another application id is set aside, not used: its
// checkpoints are offsets in the other application's changelogs.
func TestStateDirOfAnotherApplicationIsSetAside(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		in, out := kafkatest.Topic(t), kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, in, 2)
		kafkatest.CreateTopic(t, env, out, 2)
		topo := wordCountTopology(t, in, out)
		stateDir := t.TempDir()
		want := map[string]int64{}
		produceLines(t, env, in, 0, 200, []string{"a", "b", "c"}, want)
		inst := startInstance(t, topo, env, kafkatest.GroupID(t), weir.WithStateDir(stateDir))
		waitForCounts(t, env, out, want)
		require.NoError(t, inst.stop(t))

		out2 := kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, out2, 2)
		var logs lockedBuffer
		logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		inst = startInstance(t, wordCountTopology(t, in, out2), env, kafkatest.GroupID(t)+"-other",
			weir.WithStateDir(stateDir), weir.WithLogger(logger))
		requireExact(t, want, waitForCounts(t, env, out2, want))
		require.NoError(t, inst.stop(t))
		require.Contains(t, logs.String(), "cause=foreign")
		require.Contains(t, logs.String(), "file=WEIR-APPLICATION")
	})
}
