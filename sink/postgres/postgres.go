package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/weirstream/weir/sink"
)

// Mode says how records become rows.
type Mode int

const (
	// Upsert keeps one row per key (Config.Key); tombstones delete it.
	Upsert Mode = iota + 1
	// Append inserts a row per record.
	Append
	// Func hands the transaction and the records to Config.Func.
	Func
)

// DefaultProgressTable is the progress table's name when Config leaves it
// empty.
const DefaultProgressTable = "weir_sink_progress"

// DefaultRowsPerStatement bounds the rows of one multi-row INSERT.
const DefaultRowsPerStatement = 500

// DefaultTimeout bounds one Claim or Write when Config.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// Config configures a Sink.
type Config struct {
	// Pool reaches the database; required. The sink does not close it.
	Pool *pgxpool.Pool
	// Mode: Upsert, Append or Func; required.
	Mode Mode
	// Table is the table Upsert and Append write ("name" or
	// "schema.name"); it must exist.
	Table string
	// Columns are the columns Row fills, in order (Upsert, Append).
	Columns []string
	// Key are the columns of the unique index Upsert's ON CONFLICT names
	// (among Columns); required for Upsert.
	Key []string
	// Row returns a record's column values, in the order of Columns. In
	// Upsert mode it also receives tombstones (Value nil), of which only
	// the Key columns' values are used. nil: the record's key and value
	// as text, for two columns. An error is the record's: it goes to the
	// bad-record policy as a refused row does.
	Row func(r sink.Record) ([]any, error)
	// Func writes records inside tx (Func mode); required there. When it
	// fails with a data exception or a constraint violation, it is called
	// again with one record at a time to find the bad ones.
	Func func(ctx context.Context, tx pgx.Tx, records []sink.Record) error
	// ID names the sink's rows in the progress table; the ToSink name
	// when empty. Applications sharing a database and a sink name need
	// IDs of their own.
	ID string
	// ProgressTable is the progress table (DefaultProgressTable when
	// empty); created by the sink if missing.
	ProgressTable string
	// RowsPerStatement bounds the rows of one INSERT
	// (DefaultRowsPerStatement when zero, and at most what PostgreSQL's
	// 65535 parameters allow).
	RowsPerStatement int
	// Timeout bounds each Claim and Write, its transaction included
	// (DefaultTimeout when zero; negative: no bound). A call past it is
	// cancelled (pgx asks the server to cancel the statement, and the
	// transaction rolls back) and fails like an outage, so weir tries it
	// again with back-off: a database that hangs — a row lock held by
	// another session, a network that drops packets — holds the task's
	// write for at most Timeout at a time, not for good.
	Timeout time.Duration
}

// Sink is the PostgreSQL sink: a sink.Sink. Create it with New.
type Sink struct {
	cfg      Config
	table    string // quoted
	progress string // quoted
	prefix   string // the INSERT prefix: INSERT INTO t (cols) VALUES
	conflict string // Upsert's ON CONFLICT clause
	keyIdx   []int  // positions of Key among Columns

	setupMu sync.Mutex
	ready   bool // the progress table exists
}

var _ sink.Sink = (*Sink)(nil)

// New checks cfg and returns a Sink. It does not connect: the first Claim
// creates the progress table if it is missing.
func New(cfg Config) (*Sink, error) {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("postgres: "+format, a...)) }
	if cfg.Pool == nil {
		bad("no Pool")
	}
	if cfg.ProgressTable == "" {
		cfg.ProgressTable = DefaultProgressTable
	}
	if cfg.RowsPerStatement == 0 {
		cfg.RowsPerStatement = DefaultRowsPerStatement
	}
	if cfg.RowsPerStatement < 0 {
		bad("RowsPerStatement %d is negative", cfg.RowsPerStatement)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	s := &Sink{cfg: cfg, progress: quote(cfg.ProgressTable)}
	switch cfg.Mode {
	case Upsert, Append:
		if cfg.Table == "" {
			bad("no Table")
		}
		if cfg.Row == nil && len(cfg.Columns) != 2 {
			bad("without Row the record's key and value fill two Columns, not %d", len(cfg.Columns))
		}
		if len(cfg.Columns) == 0 {
			bad("no Columns")
		}
		cols := make([]string, len(cfg.Columns))
		for i, c := range cfg.Columns {
			cols[i] = pgx.Identifier{c}.Sanitize()
		}
		s.table = quote(cfg.Table)
		s.prefix = "INSERT INTO " + s.table + " (" + strings.Join(cols, ", ") + ") VALUES "
		if max := 65535 / max(len(cfg.Columns), 1); cfg.RowsPerStatement > max {
			s.cfg.RowsPerStatement = max
		}
		if cfg.Mode == Upsert {
			if len(cfg.Key) == 0 {
				bad("Upsert needs Key columns")
			}
			var keys, sets []string
			for _, k := range cfg.Key {
				i := indexOf(cfg.Columns, k)
				if i < 0 {
					bad("Key column %q is not among Columns", k)
					continue
				}
				s.keyIdx = append(s.keyIdx, i)
				keys = append(keys, pgx.Identifier{k}.Sanitize())
			}
			for _, c := range cfg.Columns {
				if indexOf(cfg.Key, c) < 0 {
					q := pgx.Identifier{c}.Sanitize()
					sets = append(sets, q+" = EXCLUDED."+q)
				}
			}
			if len(sets) == 0 {
				s.conflict = " ON CONFLICT (" + strings.Join(keys, ", ") + ") DO NOTHING"
			} else {
				s.conflict = " ON CONFLICT (" + strings.Join(keys, ", ") + ") DO UPDATE SET " + strings.Join(sets, ", ")
			}
		}
	case Func:
		if cfg.Func == nil {
			bad("Func mode needs Func")
		}
	default:
		bad("unknown Mode %d (Upsert, Append or Func)", int(cfg.Mode))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

// bound applies Config.Timeout to one call.
func (s *Sink) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.cfg.Timeout < 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, s.cfg.Timeout)
}

// quote quotes a table name, "schema.name" as two identifiers.
func quote(name string) string { return pgx.Identifier(strings.Split(name, ".")).Sanitize() }

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// id is the sink column of b's progress row.
func (s *Sink) id(name string) string {
	if s.cfg.ID != "" {
		return s.cfg.ID
	}
	return name
}

// setup creates the progress table if it is missing.
func (s *Sink) setup(ctx context.Context) error {
	s.setupMu.Lock()
	defer s.setupMu.Unlock()
	if s.ready {
		return nil
	}
	err := createTable(ctx, s.cfg.Pool, s.progress, `CREATE TABLE IF NOT EXISTS `+s.progress+` (
		sink text NOT NULL,
		task text NOT NULL,
		generation integer NOT NULL,
		claims bigint NOT NULL,
		position text NOT NULL,
		refused text NOT NULL DEFAULT '',
		updated_at timestamptz NOT NULL DEFAULT now(),
		PRIMARY KEY (sink, task))`)
	if err != nil {
		return classify(fmt.Errorf("postgres: create progress table %s: %w", s.progress, err))
	}
	s.ready = true
	return nil
}

// createTable runs a CREATE TABLE IF NOT EXISTS statement under a
// transaction-scoped advisory lock on the table's name: instances that
// start together would otherwise race in PostgreSQL's catalog, and the
// loser fail with a unique violation (23505) or "type already exists"
// (42710) although the table is there. Under the lock the second one
// finds the table and does nothing; those errors are taken for success
// all the same, for a creator that does not take the lock.
func createTable(ctx context.Context, pool *pgxpool.Pool, name, stmt string) error {
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", "weir-sink-create:"+name); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, stmt)
		return err
	})
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "23505" || pe.Code == "42P07" || pe.Code == "42710") {
		return nil // created meanwhile by another instance
	}
	return err
}

// Claim counts a claim of the task in its progress row (creating it),
// unless the row holds a newer generation, and returns the progress
// stored there with the claim's token (sink.Sink).
func (s *Sink) Claim(ctx context.Context, name string, task sink.Task, generation int32) (sink.Progress, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := s.setup(ctx); err != nil {
		return sink.Progress{}, err
	}
	var pos, refused string
	var token int64
	id := s.id(name)
	err := s.cfg.Pool.QueryRow(ctx, `INSERT INTO `+s.progress+` (sink, task, generation, claims, position) VALUES ($1, $2, $3, 1, '')
		ON CONFLICT (sink, task) DO UPDATE SET generation = EXCLUDED.generation, claims = `+s.progress+`.claims + 1
			WHERE `+s.progress+`.generation <= EXCLUDED.generation
		RETURNING position, refused, claims`, id, task.String(), generation).Scan(&pos, &refused, &token)
	if errors.Is(err, pgx.ErrNoRows) {
		// A newer generation claimed the task: this claim fences nobody.
		token = -1
		err = s.cfg.Pool.QueryRow(ctx, `SELECT position, refused FROM `+s.progress+` WHERE sink = $1 AND task = $2`,
			id, task.String()).Scan(&pos, &refused)
	}
	if err != nil {
		return sink.Progress{}, classify(fmt.Errorf("postgres: claim task %s: %w", task, err))
	}
	p, err := sink.ParsePosition(pos)
	if err != nil {
		return sink.Progress{}, fmt.Errorf("%w: postgres: progress of task %s: %w", sink.ErrPermanent, task, err)
	}
	var ids []sink.Refusal
	if refused != "" {
		if err := json.Unmarshal([]byte(refused), &ids); err != nil {
			return sink.Progress{}, fmt.Errorf("%w: postgres: refused records of task %s: %w", sink.ErrPermanent, task, err)
		}
	}
	return sink.Progress{Position: p, Refused: ids, Token: token}, nil
}
