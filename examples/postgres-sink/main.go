// Command postgres-sink keeps a word count in a PostgreSQL table, exactly
// once: lines come in on a topic, and each word's running count is
// upserted into the table word_counts by weir's PostgreSQL sink
// (sink/postgres), in the same database transaction as the progress row
// that lets a replay skip what the table already holds.
//
//	bash scripts/postgres/start.sh        # a throwaway server; prints WEIR_POSTGRES_DSN=...
//	export WEIR_POSTGRES_DSN=postgres://weir@127.0.0.1:25432/weir?sslmode=disable
//	go run ./examples/postgres-sink       # embedded broker, two instances, prints the table, exits
//	psql "$WEIR_POSTGRES_DSN" -c 'SELECT word, n FROM word_counts ORDER BY n DESC, word'
//
// Without -brokers it starts an in-process Kafka broker, creates the table
// afresh (dropping an earlier run's table and progress rows: the new
// broker's offsets start again at zero), writes a demo text, runs two
// instances that share the input's partitions — each claims its tasks'
// progress rows in the database — until the table's counts add up to
// every word written, prints the table and exits 0. psql then shows the
// same rows. With -brokers it creates the topics and the table if they
// are missing, writes the demo text if -demo is given, and runs one
// instance until interrupted: start a second with its own -state-dir and
// the two share the partitions, the table staying exact while they come
// and go. The database is named by -dsn, or WEIR_POSTGRES_DSN.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/embedded"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/sink"
	"github.com/weirstream/weir/sink/postgres"
	"github.com/weirstream/weir/topology"
)

const (
	textTopic  = "postgres-sink-text"
	partitions = 4
	appID      = "postgres-sink-example"
)

var demoText = []string{
	"the stream is the table and the table is the stream",
	"a stream of changes makes a table and a table makes a stream of changes",
	"every record is processed and every count is exact",
	"instances come and go and the partitions move with their state",
}

func main() {
	brokers := flag.String("brokers", "", "Kafka bootstrap servers (host:port,...); empty starts an embedded broker")
	dsn := flag.String("dsn", os.Getenv("WEIR_POSTGRES_DSN"), "the PostgreSQL database (default $WEIR_POSTGRES_DSN)")
	table := flag.String("table", "word_counts", "the `table` of the counts; its progress rows go to <table>_progress")
	demo := flag.Bool("demo", false, "with -brokers: write the demo text to "+textTopic)
	stateDir := flag.String("state-dir", filepath.Join(os.TempDir(), "weir-postgres-sink"), "with -brokers: the instance's state `directory` (one per instance)")
	verbose := flag.Bool("v", false, "log at debug level")
	flag.Parse()

	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	err := errors.New("no database: give -dsn or set WEIR_POSTGRES_DSN (bash scripts/postgres/start.sh starts one)")
	if *dsn != "" {
		if *brokers == "" {
			_, err = runDemo(ctx, log, *dsn, *table)
		} else {
			err = runCluster(ctx, log, strings.Split(*brokers, ","), *dsn, *table, *demo, *stateDir)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "postgres-sink:", err)
		os.Exit(1)
	}
}

// wordCount is the topology: split lines into lowercase words, count them
// per word, and hand every new count to the external sink "counts".
func wordCount() (*topology.Topology, error) {
	b := topology.NewBuilder()
	lines := topology.NewStream(b, textTopic, serde.String(), serde.String())
	words := topology.FlatMapValues(lines, func(line string) []string {
		return strings.Fields(strings.ToLower(line))
	})
	topology.GroupBy(words, func(_, word string) string { return word }, topology.Named("words")).
		Count(topology.Materialized("counts")).
		ToStream().
		ToSink("counts")
	return b.Build()
}

// createTable creates the counts table if it is missing; fresh drops it
// and its progress table first.
func createTable(ctx context.Context, pool *pgxpool.Pool, table string, fresh bool) error {
	var stmts []string
	if fresh {
		stmts = append(stmts, "DROP TABLE IF EXISTS "+table+", "+table+"_progress")
	}
	stmts = append(stmts, "CREATE TABLE IF NOT EXISTS "+table+" (word text PRIMARY KEY, n bigint NOT NULL)")
	for _, s := range stmts {
		if _, err := pool.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// newSink is the sink of the counts: one row per word, upserted.
func newSink(pool *pgxpool.Pool, table string) (*postgres.Sink, error) {
	return postgres.New(postgres.Config{
		Pool: pool, Mode: postgres.Upsert, Table: table, ProgressTable: table + "_progress",
		Columns: []string{"word", "n"}, Key: []string{"word"},
		Row: func(r sink.Record) ([]any, error) {
			n, err := serde.Int64().Deserialize("", r.Value)
			return []any{string(r.Key), n}, err
		},
	})
}

func newApp(brokers []string, log *slog.Logger, stateDir string, counts *postgres.Sink) (*weir.App, error) {
	topo, err := wordCount()
	if err != nil {
		return nil, err
	}
	return weir.New(topo,
		weir.WithBrokers(brokers...),
		weir.WithApplicationID(appID),
		weir.WithStateDir(stateDir),
		weir.WithLogger(log),
		weir.WithGuarantee(weir.ExactlyOnce),
		weir.WithSink("counts", counts),
		weir.WithSessionTimeout(10*time.Second),
		weir.WithHeartbeatInterval(time.Second),
	)
}

// runDemo runs an embedded broker and two instances in the process until
// the table counts every word written, prints the table, and returns it.
func runDemo(ctx context.Context, log *slog.Logger, dsn, table string) (map[string]int64, error) {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	if err := createTable(ctx, pool, table, true); err != nil {
		return nil, err
	}
	counts, err := newSink(pool, table)
	if err != nil {
		return nil, err
	}
	broker, err := embedded.Start(ctx, embedded.Options{Topics: map[string]int32{textTopic: partitions}})
	if err != nil {
		return nil, err
	}
	defer broker.Close()
	fmt.Printf("embedded Kafka broker on %s\n", strings.Join(broker.Addrs(), ","))
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var apps []*weir.App
	done := make(chan error, 2)
	for i := range 2 {
		// A fresh broker needs fresh local state: the stores'
		// checkpoints are offsets in this cluster's changelogs.
		dir, err := os.MkdirTemp("", "weir-postgres-sink-*")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		app, err := newApp(broker.Addrs(), log, dir, counts)
		if err != nil {
			return nil, err
		}
		apps = append(apps, app)
		go func() { done <- app.Run(runCtx) }()
		fmt.Printf("instance %d started (state in %s)\n", i+1, dir)
	}

	// Both instances in the group before the input comes, so that they
	// share it.
	if err := waitReady(ctx, apps, 60*time.Second); err != nil {
		return nil, err
	}
	total, err := produceLines(broker.Addrs(), textTopic, demoText)
	if err != nil {
		return nil, err
	}
	fmt.Printf("wrote %d lines (%d words) to %s\n", len(demoText), total, textTopic)

	rows, err := waitForTable(ctx, pool, table, total, 90*time.Second)
	cancel()
	for range apps {
		err = errors.Join(err, <-done)
	}
	if err != nil {
		return nil, err
	}
	for i, app := range apps {
		s := app.Stats()
		fmt.Printf("instance %d: %d records in, %d out (sink rows, changelog and repartition records)\n", i+1, s.RecordsIn, s.RecordsOut)
	}
	printTable(table, rows)
	fmt.Printf("query it: psql %q -c 'SELECT word, n FROM %s ORDER BY n DESC, word'\n", dsn, table)
	return rows, nil
}

// runCluster runs one instance against a real cluster until interrupted.
func runCluster(ctx context.Context, log *slog.Logger, brokers []string, dsn, table string, demo bool, stateDir string) error {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := createTable(ctx, pool, table, false); err != nil {
		return err
	}
	counts, err := newSink(pool, table)
	if err != nil {
		return err
	}
	if err := ensureTopic(brokers, textTopic, partitions); err != nil {
		return err
	}
	if demo {
		n, err := produceLines(brokers, textTopic, demoText)
		if err != nil {
			return err
		}
		fmt.Printf("wrote %d words to %s\n", n, textTopic)
	}
	app, err := newApp(brokers, log, stateDir, counts)
	if err != nil {
		return err
	}
	fmt.Printf("postgres-sink running on %s; counts go to the table %s; Ctrl-C stops\n", strings.Join(brokers, ","), table)
	err = app.Run(ctx)
	s := app.Stats()
	fmt.Printf("stopped: %d records in, %d out, %d restored\n", s.RecordsIn, s.RecordsOut, s.Restored)
	return err
}

// waitReady waits until every app is Running.
func waitReady(ctx context.Context, apps []*weir.App, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ready := 0
		for _, app := range apps {
			if app.State().Ready() {
				ready++
			}
		}
		if ready == len(apps) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d instances running after %v", ready, len(apps), timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitForTable reads the table until its counts add up to total words.
func waitForTable(ctx context.Context, pool *pgxpool.Pool, table string, total int64, timeout time.Duration) (map[string]int64, error) {
	deadline := time.Now().Add(timeout)
	for {
		rows, err := readTable(ctx, pool, table)
		if err != nil {
			return nil, err
		}
		var sum int64
		for _, n := range rows {
			sum += n
		}
		if sum == total {
			return rows, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the table's counts add up to %d of %d words after %v", sum, total, timeout)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// readTable reads the counts table.
func readTable(ctx context.Context, pool *pgxpool.Pool, table string) (map[string]int64, error) {
	rows, err := pool.Query(ctx, "SELECT word, n FROM "+table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var w string
		var n int64
		if err := rows.Scan(&w, &n); err != nil {
			return nil, err
		}
		out[w] = n
	}
	return out, rows.Err()
}
