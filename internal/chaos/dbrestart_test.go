package chaos

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// A database restart event calls the script with down, then up, counts
// itself, and is planned only with the PostgreSQL branches on and a
// script named.
func TestDBRestartRunsTheScript(t *testing.T) {
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	script := filepath.Join(dir, "outage.sh")
	require.NoError(t, os.WriteFile(script, []byte("echo \"$1\" >>"+calls+"\n"), 0o755))
	t.Setenv(postgresEnv, "postgres://nowhere/db")
	t.Setenv(PostgresEnv, "1")
	s := &scenario{
		cfg:    Config{DBRestarts: 2, DBScript: script, Gap: 10 * time.Millisecond},
		rng:    mrand.New(mrand.NewPCG(1, 1)),
		topics: Topics{In: "in"},
	}
	require.Equal(t, 2, s.dbRestarts())
	require.NoError(t, s.dbRestart(t.Context()))
	got, err := os.ReadFile(calls)
	require.NoError(t, err)
	require.Equal(t, "down\nup\n", string(got))
	require.Equal(t, 1, s.res.DBRestarts)

	s.cfg.DBScript = ""
	require.Zero(t, s.dbRestarts(), "no script")
	s.cfg.DBScript = script
	t.Setenv(PostgresEnv, "")
	require.Zero(t, s.dbRestarts(), "the branches off")

	// A script that fails fails the event, with its output.
	require.NoError(t, os.WriteFile(script, []byte("echo no cluster >&2; exit 1\n"), 0o755))
	require.ErrorContains(t, s.dbRestart(t.Context()), "no cluster")
}

// pgDown tells a database that is down or restarting from a statement
// the database refuses.
func TestPGDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens there now
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = pgx.Connect(ctx, fmt.Sprintf("postgres://weir@%s/weir?sslmode=disable&connect_timeout=2", addr))
	require.Error(t, err)
	require.True(t, pgDown(err), "connection refused: %v", err)
	require.True(t, pgDown(fmt.Errorf("chaos: create: %w", &pgconn.PgError{Code: "57P01"})), "admin shutdown")
	require.True(t, pgDown(&pgconn.PgError{Code: "57P03"}), "starting up")
	require.False(t, pgDown(&pgconn.PgError{Code: "42601"}), "a syntax error")
	require.False(t, pgDown(errors.New("chaos: something else")))
}

// A member started while the database is down waits for it rather than
// failing, and a stop during the wait ends it with the context's error
// (which RunChild takes for a graceful stop).
func TestPostgresOptionsWaitForTheDatabase(t *testing.T) {
	databaseDown(t)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := postgresOptions(ctx, Topics{In: "in"})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.GreaterOrEqual(t, time.Since(start), 1400*time.Millisecond, "it waited for the database")
}

// The verifier's check of the tables and their drop wait for a database
// that is down (another run sharing the server restarting it) rather
// than failing the scenario at once.
func TestTheRunnerWaitsForTheDatabase(t *testing.T) {
	databaseDown(t)
	topics := Topics{In: "in"}
	for name, f := range map[string]func(context.Context) error{
		"check": func(ctx context.Context) error {
			var r report
			return (&verifier{topics: topics, exp: &expectation{}}).checkPostgres(ctx, &r)
		},
		"drop": func(ctx context.Context) error { return dropPostgres(ctx, topics) },
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		start := time.Now()
		err := f(ctx)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded, name)
		require.GreaterOrEqual(t, time.Since(start), 1400*time.Millisecond, "%s waited for the database", name)
	}
}

// databaseDown turns the PostgreSQL branches on with a DSN naming a port
// nothing listens on: a database that is down.
func databaseDown(t *testing.T) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	t.Setenv(postgresEnv, fmt.Sprintf("postgres://weir@%s/weir?sslmode=disable&connect_timeout=2", addr))
	t.Setenv(PostgresEnv, "1")
}
