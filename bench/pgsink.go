package main

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/microbatch"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/sink"
	"github.com/weirstream/weir/sink/postgres"
	"github.com/weirstream/weir/topology"
)

// The PostgreSQL workload (-workloads pgsink; the database is
// WEIR_POSTGRES_DSN's): the word count's input (the same preloaded
// topic) into PostgreSQL through weir's sink (sink/postgres), exactly
// once, in both execution modes and both of the sink's table modes,
// beside a plain batched INSERT of the same rows by the parent process
// (no Kafka, no weir): what the database takes at most for those rows.
//
//   - weir-{cont,mb}-eos-pg-upsert: FlatMapValues → GroupBy → Count →
//     ToSink into (word text PRIMARY KEY, n bigint), the sink's Upsert
//     mode (the last count of each word per task and commit). Done when
//     the table's counts add up to every word of the input.
//   - weir-{cont,mb}-eos-pg-append: FlatMapValues → ToSink into
//     (line text, word text), the sink's Append mode: a row per word
//     occurrence. Done when the table holds every one.
//   - pg-batched-upsert: the parent counts the words of the input's
//     lines in order and, every 2,000 lines, writes the changed words'
//     counts in one transaction of multi-row INSERT … ON CONFLICT DO
//     UPDATE statements of 500 rows — a hand-written batcher's coalesced
//     upsert.
//   - pg-batched-insert: the parent inserts a row per word occurrence in
//     multi-row INSERT statements of 500 rows, one transaction per
//     20,000 rows.
//
// DB CPU s is the CPU time of the server's processes (the postmaster and
// its children, from /proc) during the row, the table polls included.

const (
	wlPGSink           = "pgsink"
	sysWeirContPGUps   = "weir-cont-eos-pg-upsert"
	sysWeirMBPGUps     = "weir-mb-eos-pg-upsert"
	sysWeirContPGApp   = "weir-cont-eos-pg-append"
	sysWeirMBPGApp     = "weir-mb-eos-pg-append"
	sysPGBatchedUpsert = "pg-batched-upsert"
	sysPGBatchedInsert = "pg-batched-insert"
)

// pgSystems are the rows of the PostgreSQL workload, in order.
var pgSystems = []string{sysPGBatchedUpsert, sysWeirContPGUps, sysWeirMBPGUps, sysPGBatchedInsert, sysWeirContPGApp, sysWeirMBPGApp}

// pgRow is one row of the PostgreSQL table.
type pgRow struct {
	system   string
	lines    int
	rows     int64 // rows written (upsert: the words' final rows)
	wall     time.Duration
	cpu, db  float64 // the child's and the database's CPU seconds
	err, why string
}

// pgTable names the table of a run.
func pgTable(run string) string { return strings.NewReplacer("-", "_", ".", "_").Replace(run) }

// pgRows runs the PostgreSQL workload's rows of systems (all of them if
// none names one) on the word count's input.
func (h *harness) pgRows(ctx context.Context, systems []string) []pgRow {
	var out []pgRow
	dsn := os.Getenv("WEIR_POSTGRES_DSN")
	pool, err := pgxpool.New(ctx, dsn)
	if err == nil {
		err = pool.Ping(ctx)
	}
	if dsn == "" || err != nil {
		why := "WEIR_POSTGRES_DSN is not set (scripts/postgres/start.sh starts a server)"
		if dsn != "" {
			why = err.Error()
		}
		for _, sys := range pgSystems {
			out = append(out, pgRow{system: sys, why: why})
		}
		return out
	}
	defer pool.Close()
	inp, err := h.inputFor(wlWordCount)
	if err != nil {
		return []pgRow{{system: wlPGSink, err: err.Error()}}
	}
	order := pgSystems
	if named := filterPG(systems); len(named) > 0 {
		order = named
	}
	for _, sys := range order {
		if ctx.Err() != nil {
			break
		}
		r := h.pgRun(ctx, pool, sys, inp)
		fmt.Fprintf(os.Stderr, "bench: %s/%s: %d lines, %d rows in %.2fs = %.0f lines/s, cpu %.1fs, db cpu %.1fs %s\n",
			wlPGSink, sys, r.lines, r.rows, r.wall.Seconds(), float64(r.lines)/r.wall.Seconds(), r.cpu, r.db, r.err)
		out = append(out, r)
	}
	return out
}

// filterPG returns the PostgreSQL rows among systems.
func filterPG(systems []string) []string {
	var out []string
	for _, s := range systems {
		for _, p := range pgSystems {
			if s == p {
				out = append(out, s)
			}
		}
	}
	return out
}

// pgRun runs one row.
func (h *harness) pgRun(ctx context.Context, pool *pgxpool.Pool, sys string, inp input) pgRow {
	r := pgRow{system: sys, lines: inp.in}
	h.seq++
	run := fmt.Sprintf("bench%d-%d-pg-%s", time.Now().Unix()%100000, h.seq, sys)
	table := pgTable(run)
	upsert := strings.HasSuffix(sys, "upsert")
	ddl := "CREATE TABLE " + table + " (line text NOT NULL, word text NOT NULL)"
	if upsert {
		ddl = "CREATE TABLE " + table + " (word text PRIMARY KEY, n bigint NOT NULL)"
	}
	if _, err := pool.Exec(ctx, ddl); err != nil {
		r.err = err.Error()
		return r
	}
	defer pool.Exec(context.Background(), "DROP TABLE "+table)
	var words int64
	for _, n := range h.wordCounts {
		words += n
	}
	db0, err := dbCPU(ctx, pool)
	if err != nil {
		r.err = err.Error()
		return r
	}
	t0 := time.Now()
	switch sys {
	case sysPGBatchedUpsert, sysPGBatchedInsert:
		start := cpuNow()
		r.rows, err = batchedInsert(ctx, pool, table, upsert, inp.in)
		r.wall, r.cpu = time.Since(t0), cpuNow()-start
		if err != nil {
			r.err = err.Error()
		}
	default:
		c, err := h.startChild(sys, wlPGSink, run, inp.topic, table)
		if err != nil {
			r.err = err.Error()
			return r
		}
		query, want := "SELECT count(*) FROM "+table, words
		if upsert {
			query = "SELECT coalesce(sum(n), 0)::bigint FROM " + table
		}
		var got int64
		deadline := t0.Add(h.p.runTimeout)
		for got < want && time.Now().Before(deadline) && !c.exited() && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
			if err := pool.QueryRow(ctx, query).Scan(&got); err != nil {
				r.err = err.Error()
				break
			}
		}
		r.wall = time.Since(t0)
		exited := c.exited()
		_, r.cpu = c.stop()
		r.rows = got
		if upsert {
			_ = pool.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&r.rows)
		}
		switch {
		case r.err != "":
		case got == want:
		case exited:
			r.err = fmt.Sprintf("child exited at %d of %d: %s", got, want, c.tail())
		default:
			r.err = fmt.Sprintf("timeout after %s at %d of %d: %s", h.p.runTimeout, got, want, c.tail())
		}
	}
	time.Sleep(200 * time.Millisecond) // the child's backends exit and are reaped
	db1, err := dbCPU(ctx, pool)
	if err == nil {
		r.db = db1 - db0
	}
	return r
}

// cpuNow is this process's CPU seconds so far.
func cpuNow() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime)).Seconds()
}

// batchedInsert writes the rows of a baseline row (see the workload's
// doc) and returns how many it wrote.
func batchedInsert(ctx context.Context, pool *pgxpool.Pool, table string, upsert bool, lines int) (int64, error) {
	const perStatement, linesPerTxn = 500, 2000
	r := rand.New(rand.NewSource(2)) // preload's word count input
	counts := map[string]int64{}
	var rows int64
	var pending [][2]any
	changed := map[string]bool{}
	flush := func() error {
		if upsert {
			for w := range changed {
				pending = append(pending, [2]any{w, counts[w]})
			}
			clear(changed)
		}
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			for start := 0; start < len(pending); start += perStatement {
				chunk := pending[start:min(start+perStatement, len(pending))]
				var sb strings.Builder
				args := make([]any, 0, 2*len(chunk))
				sb.WriteString("INSERT INTO " + table + " VALUES ")
				for i, p := range chunk {
					if i > 0 {
						sb.WriteString(", ")
					}
					args = append(args, p[0], p[1])
					fmt.Fprintf(&sb, "($%d, $%d)", len(args)-1, len(args))
				}
				if upsert {
					sb.WriteString(" ON CONFLICT (word) DO UPDATE SET n = EXCLUDED.n")
				}
				if _, err := tx.Exec(ctx, sb.String(), args...); err != nil {
					return err
				}
			}
			return nil
		})
		rows += int64(len(pending))
		pending = pending[:0]
		return err
	}
	for i := range lines {
		for range 10 {
			w := vocab[r.Intn(len(vocab))]
			counts[w]++
			if upsert {
				changed[w] = true
			} else {
				pending = append(pending, [2]any{strconv.Itoa(i), w})
			}
		}
		if (i+1)%linesPerTxn == 0 || i == lines-1 {
			if err := flush(); err != nil {
				return rows, err
			}
		}
	}
	if upsert {
		rows = int64(len(counts))
	}
	return rows, nil
}

// runPGChild runs a weir row of the PostgreSQL workload: the word count
// into the table a.out.
func runPGChild(ctx context.Context, a childArgs) error {
	pool, err := pgxpool.New(ctx, os.Getenv("WEIR_POSTGRES_DSN"))
	if err != nil {
		return err
	}
	defer pool.Close()
	upsert := strings.HasSuffix(a.system, "upsert")
	cfg := postgres.Config{Pool: pool, Mode: postgres.Append, Table: a.out, Columns: []string{"line", "word"}, ID: a.out}
	if upsert {
		cfg = postgres.Config{Pool: pool, Mode: postgres.Upsert, Table: a.out, Columns: []string{"word", "n"}, Key: []string{"word"}, ID: a.out,
			Row: func(r sink.Record) ([]any, error) {
				n, err := serde.Int64().Deserialize("", r.Value)
				return []any{string(r.Key), n}, err
			}}
	}
	s, err := postgres.New(cfg)
	if err != nil {
		return err
	}
	b := topology.NewBuilder()
	lines := topology.NewStream(b, a.in, serde.String(), serde.String())
	words := topology.FlatMapValues(lines, strings.Fields)
	if upsert {
		topology.GroupBy(words, func(_, w string) string { return w }, topology.Named("words")).
			Count(topology.Materialized("counts")).
			ToStream().ToSink("pg")
	} else {
		words.ToSink("pg")
	}
	topo, err := b.Build()
	if err != nil {
		return err
	}
	opts := []weir.Option{
		weir.WithBrokers(a.brokers...), weir.WithApplicationID(a.app), weir.WithStateDir(a.dir),
		weir.WithEpochInterval(100 * time.Millisecond), weir.WithGuarantee(weir.ExactlyOnce), weir.WithSink("pg", s),
	}
	if strings.Contains(a.system, "-mb-") {
		opts = append(opts, weir.WithMicroBatch(microbatch.Config{Trigger: microbatch.Continuously(), MaxRecordsPerBatch: mbMaxRecords}))
	}
	app, err := weir.New(topo, opts...)
	if err != nil {
		return err
	}
	return app.Run(ctx)
}

// pgChild returns the child function of the PostgreSQL workload's weir
// rows, nil for other systems.
func pgChild(sys string) func(context.Context, childArgs) error {
	switch sys {
	case sysWeirContPGUps, sysWeirMBPGUps, sysWeirContPGApp, sysWeirMBPGApp:
		return runPGChild
	}
	return nil
}

// dbCPU returns the CPU seconds of the database server: its postmaster's
// (found as the parent of this connection's backend) with its reaped
// children's, and its live children's.
func dbCPU(ctx context.Context, pool *pgxpool.Pool) (float64, error) {
	var backend int
	if err := pool.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		return 0, err
	}
	st, err := procStat(backend)
	if err != nil {
		return 0, fmt.Errorf("the database's CPU (is it on this machine?): %w", err)
	}
	post := st.ppid
	ps, err := procStat(int(post))
	if err != nil {
		return 0, err
	}
	total := ps.utime + ps.stime + ps.cutime + ps.cstime
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if c, err := procStat(pid); err == nil && c.ppid == post {
			total += c.utime + c.stime
		}
	}
	return float64(total) / clockTicks, nil
}

// clockTicks is Linux's USER_HZ, the unit of /proc/<pid>/stat's times.
const clockTicks = 100

type stat struct{ ppid, utime, stime, cutime, cstime int64 }

// procStat reads /proc/<pid>/stat's parent and CPU times.
func procStat(pid int) (stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command may hold spaces
	f := strings.Fields(s[i+1:])       // f[0] is the state (field 3)
	if len(f) < 15 {
		return stat{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	num := func(k int) int64 { n, _ := strconv.ParseInt(f[k-3], 10, 64); return n }
	return stat{ppid: num(4), utime: num(14), stime: num(15), cutime: num(16), cstime: num(17)}, nil
}

// renderPGTable renders the PostgreSQL workload's rows.
func renderPGTable(rows []pgRow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nPostgreSQL (WEIR_POSTGRES_DSN, on this machine; %d CPUs): the word count's input into a table, exactly once through weir's sink, beside a plain batched INSERT of the same rows (bench/pgsink.go).\n\n", runtime.NumCPU())
	b.WriteString("| system | input lines | table rows | wall s | input lines/s | input words/s | CPU s (client) | DB CPU s |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		switch {
		case r.why != "":
			fmt.Fprintf(&b, "| %s | skipped: %s | | | | | | |\n", r.system, r.why)
		case r.err != "":
			fmt.Fprintf(&b, "| %s | FAILED: %s | | | | | | |\n", r.system, lastLines(r.err, 1))
		default:
			s := r.wall.Seconds()
			fmt.Fprintf(&b, "| %s | %d | %d | %.2f | %.0f | %.0f | %.1f | %.1f |\n",
				r.system, r.lines, r.rows, s, float64(r.lines)/s, float64(r.lines*10)/s, r.cpu, r.db)
		}
	}
	return b.String()
}
