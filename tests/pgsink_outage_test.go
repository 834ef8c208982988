package tests

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/sink/postgres"
)

// privatePostgres starts a PostgreSQL server of the test's own
// (scripts/postgres/start.sh on a free loopback port) and returns a pool
// on it and functions that take it down and bring it back up
// (scripts/postgres/outage.sh): stopping the shared server of
// WEIR_POSTGRES_DSN would fail the tests of other packages running at
// the same time. It runs where WEIR_POSTGRES_DSN is set, the sign that
// start.sh works on this machine; else the test is skipped. The server is
// stopped and its files deleted at the test's end.
func privatePostgres(t *testing.T) (pool *pgxpool.Pool, down, up func()) {
	t.Helper()
	if os.Getenv("WEIR_POSTGRES_DSN") == "" {
		t.Skip("WEIR_POSTGRES_DSN is not set (scripts/postgres/start.sh starts a server)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	require.NoError(t, l.Close())
	scripts, err := filepath.Abs("../scripts/postgres")
	require.NoError(t, err)
	env := append(os.Environ(), "POSTGRES_PORT="+port, "POSTGRES_RUN=/tmp/weir-postgres-test-"+port)
	script := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command("bash", append([]string{filepath.Join(scripts, name)}, args...)...)
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		require.NoError(t, err, "%s %v: %s", name, args, stderr.String())
		return string(out)
	}
	t.Cleanup(func() { script("stop.sh") })
	out := script("start.sh")
	dsn, ok := strings.CutPrefix(strings.TrimSpace(out), "WEIR_POSTGRES_DSN=")
	require.True(t, ok, "start.sh printed %q", out)
	pool, err = pgxpool.New(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool, func() { script("outage.sh", "down") }, func() { script("outage.sh", "up") }
}

// The PostgreSQL server itself is stopped for 30 s mid-run, its open
// connections cut, while input keeps coming; then started again. The
// instance waits it out: its writes are tried again with back-off, past
// the time they are tried in place its epochs or batches rewind and are
// replayed, and it never fails. Nothing commits in Kafka meanwhile (the
// commit of an epoch or batch is one for all the instance's tasks, and
// it waits for every task's write). Once the server is back every word's
// row is its count over the whole input and every line is in the audit
// table exactly once.
func TestPostgresSinkWaitsOutTheServerDown(t *testing.T) {
	kafkatest.Long(t)
	pool, down, up := privatePostgres(t)
	env := kafkatest.Kfake(t, kafkatest.KfakeOptions())
	for _, mode := range []string{"continuous", "micro-batch"} {
		t.Run(mode, func(t *testing.T) {
			c := newPGCase(t, env, pool, 4)
			failed := make(chan error, 1)
			opts := withMode(mode, weir.WithGuarantee(weir.ExactlyOnce),
				weir.WithSink("counts", c.counts), weir.WithSink("audit", c.audit),
				weir.WithErrorHandler(func(err error) {
					select {
					case failed <- err:
					default:
					}
				}))
			vocab := []string{"a", "b", "c", "d", "e"}
			want := map[string]int64{}
			a := startInstance(t, sinkTopology(t, c.in), env, c.appID, opts...)
			produceLines(t, env, c.in, 0, 100, vocab, want)
			waitForTable(t, pool, c.prefix, want)

			down()
			start := time.Now()
			for i := range 6 {
				produceLines(t, env, c.in, 100+100*i, 100, vocab, want)
				time.Sleep(5 * time.Second)
			}
			up()
			t.Logf("the server was down for %v", time.Since(start).Round(time.Second))
			select {
			case err := <-a.done:
				t.Fatalf("the instance stopped while the server was down: %v", err)
			default:
			}
			waitForTable(t, pool, c.prefix, want)
			require.NoError(t, a.stop(t))
			requireTables(t, pool, c.prefix, want, 700)
			select {
			case err := <-failed:
				t.Logf("the outage was reported to the error handler: %v", err)
			default:
				t.Log("no error reached the error handler")
			}
		})
	}
}

// One task's writes hang — another session holds the lock of its
// progress row, as a long transaction or a stuck connection would —
// while the other partitions' input keeps coming. Each of its writes is
// cut at the sink's Timeout and tried again, the epochs or batches
// rewind, and the other tasks' writes go on: their new lines reach the
// audit table while the lock is held, none of the stuck partition's do.
// Kafka's commit waits meanwhile (one for all the instance's tasks).
// Once the lock is gone the tables are exact.
func TestPostgresSinkOtherPartitionsGoOn(t *testing.T) {
	kafkatest.Long(t)
	pool := postgresPool(t)
	env := kafkatest.Kfake(t, kafkatest.KfakeOptions())
	for _, mode := range []string{"continuous", "micro-batch"} {
		t.Run(mode, func(t *testing.T) {
			const partitions = 4
			c := newPGCase(t, env, pool, partitions, func(c *postgres.Config) { c.Timeout = time.Second })
			opts := withMode(mode, weir.WithGuarantee(weir.ExactlyOnce),
				weir.WithSink("counts", c.counts), weir.WithSink("audit", c.audit))
			vocab := []string{"a", "b", "c", "d", "e"}
			want := map[string]int64{}
			a := startInstance(t, sinkTopology(t, c.in), env, c.appID, opts...)
			produceLines(t, env, c.in, 0, 100, vocab, want)
			waitForTable(t, pool, c.prefix, want)

			ctx := context.Background()
			lock, err := pool.Begin(ctx)
			require.NoError(t, err)
			defer lock.Rollback(ctx)
			var one int
			require.NoError(t, lock.QueryRow(ctx, "SELECT 1 FROM "+postgres.DefaultProgressTable+
				" WHERE sink = $1 AND task = '0_0' FOR UPDATE", c.prefix+"-audit").Scan(&one))

			for i := range 5 { // in waves: epochs after the first hung one must write too
				produceLines(t, env, c.in, 100+40*i, 40, vocab, want)
				time.Sleep(2 * time.Second)
			}
			stuck, others := map[string]bool{}, map[string]bool{}
			for i := 100; i < 300; i++ {
				key := strconv.Itoa(i)
				p, err := kafka.PartitionForKey([]byte(key), partitions)
				require.NoError(t, err)
				if p == 0 {
					stuck[key] = true
				} else {
					others[key] = true
				}
			}
			require.NotEmpty(t, stuck)
			var audited map[string]int
			arrived := assertEventually(func() bool {
				audited = auditCounts(t, pool, c.prefix)
				for k := range others {
					if audited[k] == 0 {
						return false
					}
				}
				return true
			}, 60*time.Second)
			require.True(t, arrived, "the other partitions' lines reach the audit table while partition 0's writes hang")
			for k := range stuck {
				require.Zero(t, audited[k], "line %s of the stuck partition is in the audit table", k)
			}

			require.NoError(t, lock.Rollback(ctx))
			waitForTable(t, pool, c.prefix, want)
			waitForAudit(t, pool, c.prefix, 300)
			require.NoError(t, a.stop(t))
			requireTables(t, pool, c.prefix, want, 300)
		})
	}
}
