package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/weirstream/weir/sink"
	"github.com/weirstream/weir/sink/postgres"
)

// pool connects to the database WEIR_POSTGRES_DSN names (scripts/postgres/
// start.sh prints one), or skips the test.
func pool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	dsn := os.Getenv("WEIR_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("WEIR_POSTGRES_DSN is not set (scripts/postgres/start.sh starts a server)")
	}
	p, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

var tables atomic.Int64

// table creates a fresh table and returns its name.
func table(t *testing.T, p *pgxpool.Pool, columns string) string {
	t.Helper()
	name := fmt.Sprintf("t_%d_%d", os.Getpid(), tables.Add(1))
	if _, err := p.Exec(context.Background(), "CREATE TABLE "+name+" ("+columns+")"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = p.Exec(context.Background(), "DROP TABLE "+name) })
	return name
}

func rec(key, value string, offset int64) sink.Record {
	r := sink.Record{Key: []byte(key), Source: sink.TopicPartition{Topic: "in", Partition: 0}, Offset: offset}
	if value != "" {
		r.Value = []byte(value)
	}
	return r
}

func counts(t *testing.T, p *pgxpool.Pool, tbl string) map[string]int64 {
	t.Helper()
	rows, err := p.Query(context.Background(), "SELECT k, n FROM "+tbl)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for rows.Next() {
		var k string
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			t.Fatal(err)
		}
		out[k] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func intRow(r sink.Record) ([]any, error) {
	if r.Value == nil {
		return []any{string(r.Key), nil}, nil
	}
	n, err := strconv.ParseInt(string(r.Value), 10, 64)
	return []any{string(r.Key), n}, err
}

func TestUpsertIsIdempotentByPositionAndFenced(t *testing.T) {
	ctx := context.Background()
	p := pool(t)
	tbl := table(t, p, "k text PRIMARY KEY, n bigint NOT NULL CHECK (n >= 0)")
	s, err := postgres.New(postgres.Config{Pool: p, Mode: postgres.Upsert, Table: tbl, Columns: []string{"k", "n"},
		Key: []string{"k"}, Row: intRow, ID: tbl, RowsPerStatement: 2})
	if err != nil {
		t.Fatal(err)
	}
	task := sink.Task{Subtopology: 0, Partition: 0}
	tp := sink.TopicPartition{Topic: "in", Partition: 0}
	pos, err := s.Claim(ctx, "counts", task, 3)
	if err != nil || len(pos.Position) != 0 {
		t.Fatalf("first claim: %v %v", pos, err)
	}
	var bad []string
	batch := &sink.Batch{Sink: "counts", Task: task, Generation: 3, Token: pos.Token, To: sink.Position{tp: 6},
		Records: []sink.Record{rec("a", "1", 0), rec("b", "1", 1), rec("a", "2", 2), rec("c", "-1", 3), rec("d", "x", 4), rec("b", "", 5)},
		Bad:     func(r sink.Record, cause error) error { bad = append(bad, string(r.Key)); return nil }}
	if err := s.Write(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if got := counts(t, p, tbl); len(got) != 1 || got["a"] != 2 {
		t.Fatalf("table = %v, want a=2 (b deleted, c and d refused)", got)
	}
	if fmt.Sprint(bad) != "[d c]" && fmt.Sprint(bad) != "[c d]" {
		t.Fatalf("bad records %v, want c and d", bad)
	}
	if p2, err := s.Claim(ctx, "counts", task, 3); err != nil || len(p2.Refused) != 2 || p2.Refused[0].Error == "" || p2.Token != pos.Token+1 {
		t.Fatalf("claim after a write with refused records: %+v %v", p2, err)
	} else {
		// The same generation claimed again (a static member restarted):
		// the earlier claim is fenced.
		if err := s.Write(ctx, batch); !errors.Is(err, sink.ErrFenced) {
			t.Fatalf("a write of the earlier claim: %v, want ErrFenced", err)
		}
		pos = p2
		batch.Token = p2.Token
	}
	// The same write again (its Kafka commit failed): nothing changes.
	batch.Records = []sink.Record{rec("a", "100", 0)}
	if err := s.Write(ctx, batch); err != nil {
		t.Fatal(err)
	}
	// A write overlapping the stored position keeps only the new records.
	over := &sink.Batch{Sink: "counts", Task: task, Generation: 3, Token: pos.Token, To: sink.Position{tp: 8},
		Records: []sink.Record{rec("a", "100", 5), rec("e", "7", 7)}}
	if err := s.Write(ctx, over); err != nil {
		t.Fatal(err)
	}
	if got := counts(t, p, tbl); len(got) != 2 || got["a"] != 2 || got["e"] != 7 {
		t.Fatalf("table = %v, want a=2 e=7", got)
	}
	// A newer owner claims the task; the old one's write is refused.
	pos, err = s.Claim(ctx, "counts", task, 4)
	if err != nil || pos.Position[tp] != 8 || pos.Token != over.Token+1 {
		t.Fatalf("second claim: %v %v", pos, err)
	}
	zombie := &sink.Batch{Sink: "counts", Task: task, Generation: 3, Token: over.Token, To: sink.Position{tp: 9}, Records: []sink.Record{rec("z", "1", 8)}}
	if err := s.Write(ctx, zombie); !errors.Is(err, sink.ErrFenced) {
		t.Fatalf("zombie write: %v, want ErrFenced", err)
	}
	if got := counts(t, p, tbl); got["z"] != 0 {
		t.Fatalf("the zombie's row landed: %v", got)
	}
	// A claim of an older generation fences nobody.
	if old, err := s.Claim(ctx, "counts", task, 3); err != nil || old.Token != -1 || old.Position[tp] != 8 {
		t.Fatalf("a claim of an older generation: %+v %v", old, err)
	}
	// A failing Bad (the Fail policy) fails the whole write.
	stop := errors.New("stop")
	failing := &sink.Batch{Sink: "counts", Task: task, Generation: 4, Token: pos.Token, To: sink.Position{tp: 10},
		Records: []sink.Record{rec("f", "1", 8), rec("g", "-5", 9)}, Bad: func(sink.Record, error) error { return stop }}
	if err := s.Write(ctx, failing); !errors.Is(err, stop) {
		t.Fatalf("failing write: %v, want the Bad error", err)
	}
	if got := counts(t, p, tbl); got["f"] != 0 {
		t.Fatalf("a failed write left rows: %v", got)
	}
}

func TestAppendAndFunc(t *testing.T) {
	ctx := context.Background()
	p := pool(t)
	tbl := table(t, p, "k text NOT NULL, n bigint NOT NULL")
	app, err := postgres.New(postgres.Config{Pool: p, Mode: postgres.Append, Table: tbl, Columns: []string{"k", "n"}, Row: intRow, ID: tbl})
	if err != nil {
		t.Fatal(err)
	}
	task := sink.Task{Subtopology: 1, Partition: 2}
	tp := sink.TopicPartition{Topic: "in", Partition: 0}
	c, err := app.Claim(ctx, "audit", task, 1)
	if err != nil {
		t.Fatal(err)
	}
	b := &sink.Batch{Sink: "audit", Task: task, Generation: 1, Token: c.Token, To: sink.Position{tp: 3},
		Records: []sink.Record{rec("a", "1", 0), rec("a", "1", 1), rec("b", "2", 2)}}
	for range 2 {
		if err := app.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := p.QueryRow(ctx, "SELECT count(*) FROM "+tbl).Scan(&n); err != nil || n != 3 {
		t.Fatalf("append table has %d rows (%v), want 3", n, err)
	}

	fn, err := postgres.New(postgres.Config{Pool: p, Mode: postgres.Func, ID: tbl + "-fn",
		Func: func(ctx context.Context, tx pgx.Tx, recs []sink.Record) error {
			for _, r := range recs {
				if _, err := tx.Exec(ctx, "INSERT INTO "+tbl+" (k, n) VALUES ($1, $2::bigint)", string(r.Key), string(r.Value)); err != nil {
					return err
				}
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	c, err = fn.Claim(ctx, "audit", task, 1)
	if err != nil {
		t.Fatal(err)
	}
	var refused []string
	b = &sink.Batch{Sink: "audit", Task: task, Generation: 1, Token: c.Token, To: sink.Position{tp: 3},
		Records: []sink.Record{rec("f", "5", 0), rec("g", "not a number", 1)},
		Bad:     func(r sink.Record, cause error) error { refused = append(refused, string(r.Key)); return nil }}
	if err := fn.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := p.QueryRow(ctx, "SELECT count(*) FROM "+tbl+" WHERE k = 'f'").Scan(&n); err != nil || n != 1 || fmt.Sprint(refused) != "[g]" {
		t.Fatalf("func mode: %d rows of f (%v), refused %v", n, err, refused)
	}
}

func TestPermanentErrors(t *testing.T) {
	ctx := context.Background()
	p := pool(t)
	s, err := postgres.New(postgres.Config{Pool: p, Mode: postgres.Append, Table: "no_such_table", Columns: []string{"k", "v"}, ID: "perm"})
	if err != nil {
		t.Fatal(err)
	}
	task := sink.Task{}
	c, err := s.Claim(ctx, "x", task, 1)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Write(ctx, &sink.Batch{Sink: "x", Task: task, Generation: 1, Token: c.Token, To: sink.Position{{Topic: "in"}: 1}, Records: []sink.Record{rec("a", "b", 0)}})
	if !errors.Is(err, sink.ErrPermanent) {
		t.Fatalf("write to a missing table: %v, want ErrPermanent", err)
	}
}

func TestConfigErrors(t *testing.T) {
	_, err := postgres.New(postgres.Config{Mode: postgres.Upsert, Columns: []string{"a", "b", "c"}, Key: []string{"x"}})
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"no Pool", "no Table", "two Columns", "Key column \"x\""} {
		if !contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// A write that hangs — another session holds the task's progress row —
// is cut at Timeout with an error that is neither fenced nor permanent (an
// outage: weir tries it again), and succeeds once the lock is gone.
func TestWriteTimesOutOnAHeldLock(t *testing.T) {
	ctx := context.Background()
	p := pool(t)
	tbl := table(t, p, "k text PRIMARY KEY, n bigint NOT NULL")
	s, err := postgres.New(postgres.Config{Pool: p, Mode: postgres.Upsert, Table: tbl, Columns: []string{"k", "n"},
		Key: []string{"k"}, Row: intRow, ID: tbl, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	task := sink.Task{Subtopology: 0, Partition: 0}
	pos, err := s.Claim(ctx, "counts", task, 1)
	if err != nil {
		t.Fatal(err)
	}
	lock, err := p.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(ctx)
	if _, err := lock.Exec(ctx, "SELECT 1 FROM "+postgres.DefaultProgressTable+" WHERE sink = $1 FOR UPDATE", tbl); err != nil {
		t.Fatal(err)
	}
	batch := &sink.Batch{Sink: "counts", Task: task, Generation: 1, Token: pos.Token,
		To: sink.Position{{Topic: "in", Partition: 0}: 1}, Records: []sink.Record{rec("a", "1", 0)}}
	start := time.Now()
	err = s.Write(ctx, batch)
	if err == nil || errors.Is(err, sink.ErrFenced) || errors.Is(err, sink.ErrPermanent) {
		t.Fatalf("a write behind a held lock: %v, want an outage's error", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the write returned after %v, past its timeout", d)
	}
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if got := counts(t, p, tbl); got["a"] != 1 {
		t.Fatalf("table = %v, want a=1", got)
	}
}

// Instances that start together create the progress table together: each
// first Claim succeeds (none fails on the race in PostgreSQL's catalog,
// which would stop its application as a permanent error).
func TestConcurrentFirstClaimsCreateTheProgressTableOnce(t *testing.T) {
	ctx := context.Background()
	p := pool(t)
	tbl := table(t, p, "k text PRIMARY KEY, n bigint NOT NULL")
	progress := tbl + "_progress"
	t.Cleanup(func() { _, _ = p.Exec(context.Background(), "DROP TABLE IF EXISTS "+progress) })
	const n = 8
	errs := make(chan error, n)
	for i := range n {
		go func() {
			s, err := postgres.New(postgres.Config{Pool: p, Mode: postgres.Upsert, Table: tbl, Columns: []string{"k", "n"},
				Key: []string{"k"}, Row: intRow, ID: tbl, ProgressTable: progress})
			if err == nil {
				_, err = s.Claim(ctx, "counts", sink.Task{Subtopology: 0, Partition: int32(i)}, 1)
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatalf("a first claim: %v", err)
		}
	}
}
