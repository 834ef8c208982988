package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/third_party/kfake"
	"github.com/weirstream/weir/microbatch"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/sink"
	"github.com/weirstream/weir/sink/postgres"
	"github.com/weirstream/weir/topology"
)

// postgresPool connects to the database WEIR_POSTGRES_DSN names
// (scripts/postgres/start.sh prints one; .ci/run exports it), or skips.
func postgresPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	dsn := os.Getenv("WEIR_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("WEIR_POSTGRES_DSN is not set (scripts/postgres/start.sh starts a server)")
	}
	p, err := pgxpool.New(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

// sinkTopology counts words into the external sink "counts" and keeps
// every input line in the external sink "audit".
func sinkTopology(t *testing.T, in string) *topology.Topology {
	t.Helper()
	b := topology.NewBuilder()
	lines := topology.NewStream(b, in, serde.String(), serde.String())
	lines.ToSink("audit")
	words := topology.FlatMapValues(lines, strings.Fields)
	topology.GroupBy(words, func(_, w string) string { return w }, topology.Named("words")).
		Count(topology.Materialized("counts")).
		ToStream().ToSink("counts")
	topo, err := b.Build()
	require.NoError(t, err)
	return topo
}

// sinkTables creates the tables of one test: <p>_counts (upsert, one row
// per word) and <p>_audit (append, one row per line; a CHECK refuses lines
// holding "poison") and returns the sinks writing them.
func sinkTables(t *testing.T, pool *pgxpool.Pool, prefix string, tune ...func(*postgres.Config)) (counts, audit *postgres.Sink) {
	t.Helper()
	ctx := context.Background()
	for _, stmt := range []string{
		"CREATE TABLE " + prefix + "_counts (word text PRIMARY KEY, n bigint NOT NULL)",
		"CREATE TABLE " + prefix + "_audit (line_key text NOT NULL, line text NOT NULL CHECK (line NOT LIKE '%poison%'))",
	} {
		_, err := pool.Exec(ctx, stmt)
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		_, _ = pool.Exec(context.Background(), "DROP TABLE "+prefix+"_counts, "+prefix+"_audit")
		_, _ = pool.Exec(context.Background(), "DELETE FROM "+postgres.DefaultProgressTable+" WHERE sink LIKE $1", prefix+"%")
	})
	return newSinks(t, pool, prefix, tune...)
}

// newSinks returns the sinks of the tables sinkTables created; tune, if
// given, changes both sinks' configurations.
func newSinks(t *testing.T, pool *pgxpool.Pool, prefix string, tune ...func(*postgres.Config)) (counts, audit *postgres.Sink) {
	t.Helper()
	config := func(c postgres.Config) postgres.Config {
		for _, f := range tune {
			f(&c)
		}
		return c
	}
	var err error
	counts, err = postgres.New(config(postgres.Config{
		Pool: pool, Mode: postgres.Upsert, Table: prefix + "_counts", Columns: []string{"word", "n"}, Key: []string{"word"},
		ID: prefix + "-counts", RowsPerStatement: 7,
		Row: func(r sink.Record) ([]any, error) {
			if r.Value == nil {
				return []any{string(r.Key), nil}, nil
			}
			n, err := serde.Int64().Deserialize("", r.Value)
			return []any{string(r.Key), n}, err
		},
	}))
	require.NoError(t, err)
	audit, err = postgres.New(config(postgres.Config{
		Pool: pool, Mode: postgres.Append, Table: prefix + "_audit", Columns: []string{"line_key", "line"}, ID: prefix + "-audit",
	}))
	require.NoError(t, err)
	return counts, audit
}

// tableCounts reads the counts table.
func tableCounts(t *testing.T, pool *pgxpool.Pool, prefix string) map[string]int64 {
	t.Helper()
	return queryCounts[int64](t, pool, "SELECT word, n FROM "+prefix+"_counts")
}

// auditCounts reads how often each line key is in the audit table.
func auditCounts(t *testing.T, pool *pgxpool.Pool, prefix string) map[string]int {
	t.Helper()
	return queryCounts[int](t, pool, "SELECT line_key, count(*) FROM "+prefix+"_audit GROUP BY line_key")
}

// queryCounts runs a query of (text, number) rows into a map.
func queryCounts[N int | int64](t *testing.T, pool *pgxpool.Pool, query string) map[string]N {
	t.Helper()
	rows, err := pool.Query(context.Background(), query)
	require.NoError(t, err)
	out := map[string]N{}
	for rows.Next() {
		var k string
		var n N
		require.NoError(t, rows.Scan(&k, &n))
		out[k] = n
	}
	require.NoError(t, rows.Err())
	return out
}

// pgCase is one test's input topic, application id and tables.
type pgCase struct {
	in, appID, prefix string
	counts, audit     *postgres.Sink
}

// newPGCase creates an input topic of the given partitions and the
// tables of sinkTables under a fresh prefix (tune: as sinkTables').
func newPGCase(t *testing.T, env *kafkatest.Env, pool *pgxpool.Pool, partitions int32, tune ...func(*postgres.Config)) pgCase {
	t.Helper()
	c := pgCase{in: kafkatest.Topic(t), appID: kafkatest.GroupID(t), prefix: fmt.Sprintf("pg%d", time.Now().UnixNano())}
	kafkatest.CreateTopic(t, env, c.in, partitions)
	c.counts, c.audit = sinkTables(t, pool, c.prefix, tune...)
	return c
}

// withMode adds micro-batch mode's option (50 records a batch) to opts
// when mode is "micro-batch".
func withMode(mode string, opts ...weir.Option) []weir.Option {
	if mode == "micro-batch" {
		opts = append(opts, weir.WithMicroBatch(microbatch.Config{MaxRecordsPerBatch: 50}))
	}
	return opts
}

// requireTables checks the end of an exactly-once run: every word's row
// is its count over the whole input, and the audit table holds lines
// distinct lines, each once.
func requireTables(t *testing.T, pool *pgxpool.Pool, prefix string, want map[string]int64, lines int) {
	t.Helper()
	require.Equal(t, want, tableCounts(t, pool, prefix), "every word's row is its count over the whole input")
	requireAuditOnce(t, pool, prefix, lines)
}

// requireAuditOnce checks that the audit table holds lines distinct
// lines, each once, and returns them.
func requireAuditOnce(t *testing.T, pool *pgxpool.Pool, prefix string, lines int) map[string]int {
	t.Helper()
	audited := auditCounts(t, pool, prefix)
	require.Len(t, audited, lines)
	for k, n := range audited {
		require.Equal(t, 1, n, "line %s is in the audit table %d times", k, n)
	}
	return audited
}

// Two instances count words into PostgreSQL (upsert) and keep every line
// in an audit table (append), in both modes and under both guarantees.
// Mid-run one instance stops and a new one starts on an empty state dir
// (its partitions move, their state is restored from the changelog); under
// exactly-once, epochs also fail after their database write — a
// transaction's EndTxn or TxnOffsetCommit refused — so that the store is
// ahead of Kafka's committed offsets and the replay must skip what it
// holds. A line holding "poison" is refused by the audit table's CHECK and
// dead-lettered with PostgreSQL's error. At the end every word's row
// equals its count over all the input and every other line is in the
// audit table exactly once.
func TestPostgresSinkExactlyOnce(t *testing.T) {
	pool := postgresPool(t)
	env := kafkatest.Kfake(t, kafkatest.KfakeOptions())
	for _, g := range []weir.Guarantee{weir.ExactlyOnce, weir.AtLeastOnce} {
		for _, mode := range []string{"continuous", "micro-batch"} {
			t.Run(g.String()+"_"+mode, func(t *testing.T) {
				testPostgresSink(t, env, pool, g, mode)
			})
		}
	}
}

func testPostgresSink(t *testing.T, env *kafkatest.Env, pool *pgxpool.Pool, g weir.Guarantee, mode string) {
	c := newPGCase(t, env, pool, 4)
	in, appID, prefix := c.in, c.appID, c.prefix
	topo := sinkTopology(t, in)
	opts := withMode(mode, weir.WithGuarantee(g), weir.WithSink("counts", c.counts), weir.WithSink("audit", c.audit),
		weir.WithBadRecordPolicy(weir.DeadLetter))
	vocab := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	want := map[string]int64{}
	lines := 200 + 1 + 100 + 100 + 200 // the lines produced below, poison included
	if g == weir.ExactlyOnce {
		lines += 200 // those produced while transactions fail
	}
	a := startInstance(t, topo, env, appID, opts...)
	b := startInstance(t, topo, env, appID, opts...)
	produceLines(t, env, in, 0, 200, vocab, want)
	if g == weir.ExactlyOnce {
		waitForTable(t, pool, prefix, want)
	} else {
		waitForAudit(t, pool, prefix, 200)
	}

	// A poison line: counted, but refused by the audit table.
	poison := map[string]int64{}
	produceLines(t, env, in, 200, 1, []string{"poison"}, poison)
	for w, n := range poison {
		want[w] += n
	}
	if g == weir.ExactlyOnce {
		// Transactions fail after the database write: the store is ahead.
		for _, f := range []kfake.Fault{
			{Keys: []kmsg.Key{kmsg.EndTxn}, Err: kerr.UnknownProducerID, Count: 2},
			{Keys: []kmsg.Key{kmsg.TxnOffsetCommit}, Err: kerr.IllegalGeneration, Count: 1},
		} {
			h := env.Cluster().Fault(f)
			produceLines(t, env, in, 201+int(f.Keys[0])*1000, 100, vocab, want)
			require.Eventually(t, func() bool { return h.Hits() > 0 }, 30*time.Second, 20*time.Millisecond, "the fault never fired")
			h.Remove()
		}
	}
	produceLines(t, env, in, 10_000, 100, vocab, want)
	require.NoError(t, a.stop(t))
	produceLines(t, env, in, 20_000, 100, vocab, want)
	d := startInstance(t, topo, env, appID, opts...) // an empty state dir
	produceLines(t, env, in, 30_000, 200, vocab, want)
	if g == weir.ExactlyOnce {
		waitForTable(t, pool, prefix, want)
	} else {
		waitForAudit(t, pool, prefix, lines-1) // all but the poison line
		waitForTableAtLeast(t, pool, prefix, want)
	}
	require.NoError(t, b.stop(t))
	require.NoError(t, d.stop(t))

	got := tableCounts(t, pool, prefix)
	if g == weir.ExactlyOnce {
		require.Equal(t, want, got, "every word's row is its count over the whole input")
	} else {
		// At-least-once: a partition that moves while its offsets are not
		// committed (a commit refused during the rebalance) is processed
		// again on state that counted it: counts may be higher, never
		// lower.
		for w, n := range want {
			require.GreaterOrEqual(t, got[w], n, "word %s: nothing is lost", w)
		}
	}
	audited := requireAuditOnce(t, pool, prefix, lines-1) // every line but the poison one
	require.NotContains(t, audited, "200", "the poison line was refused")
	dlq := kafkatest.ReadCommitted(t, env, tasks.DeadLetterTopic(in))
	if g == weir.ExactlyOnce {
		require.Len(t, dlq, 1, "the poison line is dead-lettered once")
	} else {
		require.NotEmpty(t, dlq, "the poison line is dead-lettered (at least once)")
	}
	headers := map[string]string{}
	for _, h := range dlq[0].Headers {
		headers[h.Key] = string(h.Value)
	}
	require.Equal(t, "audit", headers[tasks.HeaderErrorNode])
	require.Contains(t, headers[tasks.HeaderErrorMessage], "check constraint")
}

// waitForAudit waits until the audit table holds n distinct lines.
func waitForAudit(t *testing.T, pool *pgxpool.Pool, prefix string, n int) {
	t.Helper()
	var got int
	if !assertEventually(func() bool { got = len(auditCounts(t, pool, prefix)); return got >= n }, 90*time.Second) {
		t.Fatalf("the audit table holds %d lines, want %d", got, n)
	}
}

// waitForTableAtLeast waits until every word's row is at least want's.
func waitForTableAtLeast(t *testing.T, pool *pgxpool.Pool, prefix string, want map[string]int64) {
	t.Helper()
	waitForTableCounts(t, pool, prefix, want, "at least", func(got, want int64) bool { return got >= want })
}

// waitForTable waits until the counts table holds want.
func waitForTable(t *testing.T, pool *pgxpool.Pool, prefix string, want map[string]int64) {
	t.Helper()
	waitForTableCounts(t, pool, prefix, want, "", func(got, want int64) bool { return got == want })
}

// waitForTableCounts waits until ok holds for every word's row and its count
// in want.
func waitForTableCounts(t *testing.T, pool *pgxpool.Pool, prefix string, want map[string]int64, how string, ok func(got, want int64) bool) {
	t.Helper()
	var got map[string]int64
	done := assertEventually(func() bool {
		got = tableCounts(t, pool, prefix)
		for w, n := range want {
			if !ok(got[w], n) {
				return false
			}
		}
		return true
	}, 90*time.Second)
	if !done {
		t.Fatalf("the counts table never reached the counts of the input:\n got  %v\n want %s %v", got, how, want)
	}
}

func assertEventually(cond func() bool, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(200 * time.Millisecond)
	}
	return cond()
}

// A write from an owner older than the task's latest claim is refused
// inside the database transaction. The test plays the newer owner: it
// claims a task of the running instance with the next group generation,
// as an instance that took the partition over would. The running
// instance — now a zombie for that task — has its next write refused
// (sink.ErrFenced), rewinds, claims the task again, and goes on from the
// committed offsets: at the end the tables are exact.
func TestPostgresSinkFencesAnOlderOwner(t *testing.T) {
	pool := postgresPool(t)
	env := kafkatest.Kfake(t, kafkatest.KfakeOptions())
	for _, mode := range []string{"continuous", "micro-batch"} {
		t.Run(mode, func(t *testing.T) {
			c := newPGCase(t, env, pool, 2)
			var fenced atomic.Int64
			opts := withMode(mode,
				weir.WithGuarantee(weir.ExactlyOnce), weir.WithSink("counts", c.counts), weir.WithSink("audit", c.audit),
				weir.WithErrorHandler(func(err error) {
					if errors.Is(err, sink.ErrFenced) {
						fenced.Add(1)
					}
				}))
			vocab := []string{"a", "b", "c", "d"}
			want := map[string]int64{}
			a := startInstance(t, sinkTopology(t, c.in), env, c.appID, opts...)
			produceLines(t, env, c.in, 0, 100, vocab, want)
			waitForTable(t, pool, c.prefix, want)

			var gen int32
			require.NoError(t, pool.QueryRow(context.Background(),
				"SELECT generation FROM "+postgres.DefaultProgressTable+" WHERE sink = $1 AND task = '0_0'", c.prefix+"-audit").Scan(&gen))
			_, err := c.audit.Claim(context.Background(), "audit", sink.Task{Subtopology: 0, Partition: 0}, gen+1)
			require.NoError(t, err)

			produceLines(t, env, c.in, 100, 100, vocab, want)
			waitForTable(t, pool, c.prefix, want)
			require.NoError(t, a.stop(t))
			require.Positive(t, fenced.Load(), "the older owner's write was refused")
			requireTables(t, pool, c.prefix, want, 200)
		})
	}
}

// outageSink fails every call while its outage lasts, as a database that
// is down does (connection refused).
type outageSink struct {
	sink.Sink
	until  *atomic.Int64 // unix nanoseconds
	failed *atomic.Int64
}

func (o outageSink) down() error {
	if time.Now().UnixNano() < o.until.Load() {
		o.failed.Add(1)
		return errors.New("dial tcp 127.0.0.1:5432: connect: connection refused (a simulated outage)")
	}
	return nil
}

func (o outageSink) Claim(ctx context.Context, name string, task sink.Task, generation int32) (sink.Progress, error) {
	if err := o.down(); err != nil {
		return sink.Progress{}, err
	}
	return o.Sink.Claim(ctx, name, task, generation)
}

func (o outageSink) Write(ctx context.Context, b *sink.Batch) error {
	if err := o.down(); err != nil {
		return err
	}
	return o.Sink.Write(ctx, b)
}

// The database is down for 12 s while input keeps coming: the writes are
// tried again with back-off, past the 10 s they are tried in place the
// epochs rewind and their tasks' claims wait for the database, and once
// it is back everything is written, exactly once.
func TestPostgresSinkWaitsOutAnOutage(t *testing.T) {
	kafkatest.Long(t)
	pool := postgresPool(t)
	env := kafkatest.Kfake(t, kafkatest.KfakeOptions())
	for _, mode := range []string{"continuous", "micro-batch"} {
		t.Run(mode, func(t *testing.T) {
			c := newPGCase(t, env, pool, 4)
			var until, failed atomic.Int64
			opts := withMode(mode, weir.WithGuarantee(weir.ExactlyOnce),
				weir.WithSink("counts", outageSink{c.counts, &until, &failed}),
				weir.WithSink("audit", outageSink{c.audit, &until, &failed}))
			vocab := []string{"a", "b", "c", "d", "e"}
			want := map[string]int64{}
			a := startInstance(t, sinkTopology(t, c.in), env, c.appID, opts...)
			produceLines(t, env, c.in, 0, 100, vocab, want)
			waitForTable(t, pool, c.prefix, want)

			until.Store(time.Now().Add(12 * time.Second).UnixNano())
			for i := range 6 {
				produceLines(t, env, c.in, 100+100*i, 100, vocab, want)
				time.Sleep(2 * time.Second)
			}
			waitForTable(t, pool, c.prefix, want)
			require.NoError(t, a.stop(t))
			require.Positive(t, failed.Load(), "the outage failed calls")
			requireTables(t, pool, c.prefix, want, 700)
		})
	}
}

const pgChildEnv = "WEIR_PG_CHILD"

// TestPostgresSinkCrashChild is the child process of
// TestPostgresSinkSurvivesSIGKILL: an instance writing the word counts and
// the audit table, configured by the environment, running until killed
// (or, on SIGTERM, stopped gracefully). It is skipped in a normal run.
func TestPostgresSinkCrashChild(t *testing.T) {
	if os.Getenv(pgChildEnv) == "" {
		t.Skip("child process of the PostgreSQL sink's crash test")
	}
	env := func(k string) string { return os.Getenv("WEIR_CHILD_" + k) }
	pool := postgresPool(t)
	counts, audit := newSinks(t, pool, env("PREFIX"))
	opts := append(childOptions(env), weir.WithSink("counts", counts), weir.WithSink("audit", audit))
	app, err := weir.New(sinkTopology(t, env("IN")), opts...)
	require.NoError(t, err)
	ctx, stop := signalContext()
	defer stop()
	require.NoError(t, app.Run(ctx))
}

// startPostgresChild starts a child instance with its own state dir.
func startPostgresChild(t *testing.T, env *kafkatest.Env, mode, appID, in, prefix, stateDir string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPostgresSinkCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), pgChildEnv+"=1",
		"WEIR_CHILD_BROKERS="+strings.Join(env.Brokers, ","), "WEIR_CHILD_APP="+appID, "WEIR_CHILD_IN="+in,
		"WEIR_CHILD_PREFIX="+prefix, "WEIR_CHILD_STATE_DIR="+stateDir, "WEIR_CHILD_MODE="+mode)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	require.NoError(t, cmd.Start())
	c := &child{cmd: cmd, done: make(chan error, 1)}
	go func() { c.done <- cmd.Wait() }()
	t.Cleanup(func() { c.kill(t) })
	return c
}

// Two instances, child processes, write the word counts and the audit
// table while input flows; each is killed with SIGKILL in the middle of
// its epochs or batches — between a database write and its Kafka commit,
// some of the time — and restarted, once on its own state dir and once on
// an empty one. At the end every word's row is its count over the whole
// input and every line is in the audit table exactly once.
func TestPostgresSinkSurvivesSIGKILL(t *testing.T) {
	kafkatest.Long(t)
	pool := postgresPool(t)
	env := kafkatest.Kfake(t, kafkatest.KfakeOptions())
	for _, mode := range []string{"continuous", "micro-batch"} {
		t.Run(mode, func(t *testing.T) {
			c := newPGCase(t, env, pool, 4)
			in, appID, prefix := c.in, c.appID, c.prefix
			vocab := []string{"a", "b", "c", "d", "e", "f"}
			want := map[string]int64{}
			dirA, dirB := t.TempDir(), t.TempDir()
			a := startPostgresChild(t, env, mode, appID, in, prefix, dirA)
			b := startPostgresChild(t, env, mode, appID, in, prefix, dirB)
			next := 0
			feed := func(rounds int) {
				for range rounds {
					produceLines(t, env, in, next, 50, vocab, want)
					next += 50
					time.Sleep(150 * time.Millisecond)
				}
			}
			feed(10)
			a.kill(t)
			feed(5)
			a = startPostgresChild(t, env, mode, appID, in, prefix, dirA) // its own state dir
			feed(10)
			b.kill(t)
			feed(5)
			b = startPostgresChild(t, env, mode, appID, in, prefix, t.TempDir()) // an empty one
			feed(10)
			a.kill(t)
			a = startPostgresChild(t, env, mode, appID, in, prefix, dirA)
			feed(5)
			waitForTable(t, pool, prefix, want)
			a.stop(t)
			b.stop(t)
			requireTables(t, pool, prefix, want, next)
		})
	}
}
