package chaos

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/sink"
	"github.com/weirstream/weir/sink/postgres"
	"github.com/weirstream/weir/topology"
)

// The PostgreSQL branches. When WEIR_CHAOS_POSTGRES is 1 and
// WEIR_POSTGRES_DSN names a database (the environment the runner and its
// children share), the workload also writes through weir's PostgreSQL
// sink (sink/postgres), in the sub-topology after the repartition by
// key:
//
//   - PGAccounts, upsert: the running aggregate of each account, one row
//     per account in the table <prefix>_accounts;
//   - PGAudit, append: every input the aggregation reads (every good one,
//     and the end-of-run records), one row per input id in
//     <prefix>_audit.
//
// The verifier (checkPostgres) reads the tables back: every account's row
// is the fold of all its good inputs, and every good input's id is in
// the audit table exactly once — none lost, none applied twice — across
// the scenario's kills, restarts on empty state dirs, rebalances and
// stalls. The tables' prefix is derived from the input topic's name, so
// that every process of a scenario names the same tables.

// The ToSink names of the PostgreSQL branches.
const (
	PGAccounts = "pg-accounts"
	PGAudit    = "pg-audit"
)

// postgresEnv names the database of the PostgreSQL branches, and
// PostgresEnv (set to 1) turns them on.
const postgresEnv = "WEIR_POSTGRES_DSN"

// PostgresEnv is the environment variable that turns the PostgreSQL
// branches on when set to 1 (with WEIR_POSTGRES_DSN naming the
// database): `WEIR_CHAOS_POSTGRES=1 go run ./cmd/weir-chaos`. They are
// off by default, since they need a database; .ci/run turns them on in
// its kfake and Kafka 4.4 lines, with a database restart per scenario
// (Config.DBRestarts).
const PostgresEnv = "WEIR_CHAOS_POSTGRES"

// pgPrefix returns the prefix of the scenario's tables, "" when the
// PostgreSQL branches are off (PostgresEnv not 1, or no
// WEIR_POSTGRES_DSN).
func (t Topics) pgPrefix() string {
	if os.Getenv(PostgresEnv) != "1" || os.Getenv(postgresEnv) == "" || t.In == "" {
		return ""
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(t.In))
	return fmt.Sprintf("chaos_%016x", h.Sum64())
}

// buildPostgres adds the PostgreSQL branches to the sub-topology of byKey
// and aggs, when the scenario has them.
func buildPostgres(t Topics, byKey topology.Stream[string, Txn], aggs topology.Table[string, Agg]) {
	if t.pgPrefix() == "" {
		return
	}
	aggs.ToStream().ToSink(PGAccounts)
	byKey.ToSink(PGAudit)
}

// postgresOptions connects to the database, creates the scenario's tables
// if they are missing, and returns the options registering the
// PostgreSQL branches' sinks and the pool to close after the run; none
// when the scenario has no PostgreSQL branches.
func postgresOptions(ctx context.Context, t Topics) ([]weir.Option, func(), error) {
	prefix := t.pgPrefix()
	if prefix == "" {
		return nil, func() {}, nil
	}
	pool, err := pgxpool.New(ctx, os.Getenv(postgresEnv))
	if err != nil {
		return nil, nil, fmt.Errorf("chaos: %s: %w", postgresEnv, err)
	}
	// A member may start while the database is down or restarting (a
	// database restart event, dbrestart.go): the tables wait for it.
	if err := untilUp(ctx, func() error { return createPGTables(ctx, pool, prefix) }); err != nil {
		pool.Close()
		return nil, nil, err
	}
	accounts, err := postgres.New(postgres.Config{
		Pool: pool, Mode: postgres.Upsert, Table: prefix + "_accounts", ID: prefix + "-accounts",
		Columns: []string{"account", "count", "sum", "min", "max", "last_k", "last_id"}, Key: []string{"account"},
		Row: func(r sink.Record) ([]any, error) {
			a, err := serde.JSON[Agg]().Deserialize("", r.Value)
			return []any{string(r.Key), a.Count, a.Sum, a.Min, a.Max, a.LastK, a.LastID}, err
		},
	})
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	audit, err := postgres.New(postgres.Config{
		Pool: pool, Mode: postgres.Append, Table: prefix + "_audit", ID: prefix + "-audit",
		Columns: []string{"id", "account", "k"},
		Row: func(r sink.Record) ([]any, error) {
			t, err := serde.JSON[Txn]().Deserialize("", r.Value)
			return []any{t.ID, string(r.Key), t.K}, err
		},
	})
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return []weir.Option{weir.WithSink(PGAccounts, accounts), weir.WithSink(PGAudit, audit)}, pool.Close, nil
}

// createPGTables creates the scenario's tables if they are missing.
func createPGTables(ctx context.Context, pool *pgxpool.Pool, prefix string) error {
	for _, stmt := range []string{
		"CREATE TABLE IF NOT EXISTS " + prefix + "_accounts (account text PRIMARY KEY, count bigint NOT NULL, sum bigint NOT NULL," +
			" min bigint NOT NULL, max bigint NOT NULL, last_k bigint NOT NULL, last_id bigint NOT NULL)",
		"CREATE TABLE IF NOT EXISTS " + prefix + "_audit (id bigint NOT NULL, account text NOT NULL, k bigint NOT NULL)",
	} {
		// Under an advisory lock: the three members start together, and
		// PostgreSQL's catalog refuses concurrent creators of one table
		// (23505, 42710) although IF NOT EXISTS.
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", "weir-chaos-create:"+prefix); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, stmt)
			return err
		})
		if err != nil {
			return fmt.Errorf("chaos: %s: %w", stmt, err)
		}
	}
	return nil
}

// untilUp calls f until it succeeds or fails for a reason other than the
// database being unreachable, starting or shutting down (a connection
// refused or cut, SQLSTATE class 08 or 57), for at most two minutes.
func untilUp(ctx context.Context, f func() error) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := f()
		if err == nil || !pgDown(err) || time.Now().After(deadline) {
			return err
		}
		if serr := sleepCtx(ctx, 250*time.Millisecond); serr != nil {
			return fmt.Errorf("chaos: waiting for the database: %w", errors.Join(serr, err))
		}
	}
}

// pgDown reports whether err says the database is unreachable, starting
// or shutting down, rather than that the statement is wrong.
func pgDown(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57")
	}
	var connErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connErr) || errors.As(err, &netErr) || pgconn.SafeToRetry(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}

// dropPostgres drops the scenario's tables (a passed scenario's, as its
// topics are deleted), if it had the PostgreSQL branches.
func dropPostgres(ctx context.Context, t Topics) error {
	prefix := t.pgPrefix()
	if prefix == "" {
		return nil
	}
	conn, err := connectPG(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS "+prefix+"_accounts, "+prefix+"_audit"); err != nil {
		return fmt.Errorf("chaos: drop the scenario's tables: %w", err)
	}
	return nil
}

// connectPG connects the runner (the verifier, the tables' drop) to the
// database, waiting for it (untilUp) while it is down: another scenario
// or run sharing the server may be restarting it (-db-restarts).
func connectPG(ctx context.Context) (*pgx.Conn, error) {
	var conn *pgx.Conn
	err := untilUp(ctx, func() error {
		var err error
		conn, err = pgx.Connect(ctx, os.Getenv(postgresEnv))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("chaos: connect to %s: %w", postgresEnv, err)
	}
	return conn, nil
}
