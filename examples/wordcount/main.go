// Command wordcount counts words with weir: lines come in on a topic, the
// running count of each word goes out on another.
//
//	go run ./examples/wordcount                           # embedded broker, demo text, prints the counts, exits
//	go run ./examples/wordcount -brokers localhost:9092   # a real cluster, runs until interrupted
//
// Without -brokers it starts an in-process Kafka broker, writes a fixed
// demo text, runs the topology until every word is counted, prints the
// final counts sorted, and exits 0. With -brokers it creates the topics if
// needed, writes the demo text only if -demo is given, and runs until
// interrupted (SIGINT/SIGTERM) — start several to watch them share the
// partitions.
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
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/embedded"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

const (
	textTopic   = "wordcount-text"
	countsTopic = "wordcount-counts"
	partitions  = 4
)

var demoText = []string{
	"the stream is the table and the table is the stream",
	"a stream of changes makes a table and a table makes a stream of changes",
	"every record is processed and every count is exact",
	"instances come and go and the partitions move with their state",
}

func main() {
	brokers := flag.String("brokers", "", "Kafka bootstrap servers (host:port,...); empty starts an embedded broker")
	demo := flag.Bool("demo", false, "with -brokers: write the demo text to "+textTopic)
	stateDir := flag.String("state-dir", filepath.Join(os.TempDir(), "weir-wordcount"), "with -brokers: the instance's state `directory` (one per instance)")
	verbose := flag.Bool("v", false, "log at debug level")
	flag.Parse()

	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var err error
	if *brokers == "" {
		err = runDemo(ctx, log)
	} else {
		err = runCluster(ctx, log, strings.Split(*brokers, ","), *demo, *stateDir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "wordcount:", err)
		os.Exit(1)
	}
}

// wordCount is the topology: split lines into lowercase words, count them
// per word, write every new count.
func wordCount() (*topology.Topology, error) {
	b := topology.NewBuilder()
	lines := topology.NewStream(b, textTopic, serde.String(), serde.String())
	words := topology.FlatMapValues(lines, func(line string) []string {
		return strings.Fields(strings.ToLower(line))
	})
	topology.GroupBy(words, func(_, word string) string { return word }, topology.Named("words")).
		Count(topology.Materialized("counts")).
		ToStream().
		To(countsTopic)
	return b.Build()
}

func newApp(brokers []string, log *slog.Logger, stateDir string) (*weir.App, error) {
	topo, err := wordCount()
	if err != nil {
		return nil, err
	}
	return weir.New(topo,
		weir.WithBrokers(brokers...),
		weir.WithApplicationID("wordcount"),
		weir.WithStateDir(stateDir),
		weir.WithLogger(log),
		weir.WithSessionTimeout(10*time.Second),
		weir.WithHeartbeatInterval(time.Second),
	)
}

// runDemo runs everything in the process and prints the final counts.
func runDemo(ctx context.Context, log *slog.Logger) error {
	broker, err := embedded.Start(ctx, embedded.Options{
		Topics: map[string]int32{textTopic: partitions, countsTopic: partitions},
	})
	if err != nil {
		return err
	}
	defer broker.Close()
	fmt.Printf("embedded Kafka broker on %s\n", strings.Join(broker.Addrs(), ","))

	client, err := newClient(broker.Addrs())
	if err != nil {
		return err
	}
	defer client.Close()
	total, err := client.produceLines(textTopic, demoText)
	if err != nil {
		return err
	}
	fmt.Printf("wrote %d lines (%d words) to %s\n", len(demoText), total, textTopic)

	// A fresh broker needs fresh local state: the stores' checkpoints are
	// offsets in this cluster's changelogs.
	stateDir, err := os.MkdirTemp("", "weir-wordcount-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stateDir)
	app, err := newApp(broker.Addrs(), log, stateDir)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- app.Run(runCtx) }()

	// Read the output until the counts add up to every word written.
	counts, err := client.readCounts(ctx, countsTopic, total, 60*time.Second)
	cancel()
	if runErr := <-done; runErr != nil {
		return errors.Join(err, runErr)
	}
	if err != nil {
		return err
	}
	printCounts(counts)
	return nil
}

// runCluster runs one instance against a real cluster until interrupted.
func runCluster(ctx context.Context, log *slog.Logger, brokers []string, demo bool, stateDir string) error {
	client, err := newClient(brokers)
	if err != nil {
		return err
	}
	defer client.Close()
	if err := client.ensureTopics(partitions, textTopic, countsTopic); err != nil {
		return err
	}
	if demo {
		n, err := client.produceLines(textTopic, demoText)
		if err != nil {
			return err
		}
		fmt.Printf("wrote %d words to %s\n", n, textTopic)
	}
	app, err := newApp(brokers, log, stateDir)
	if err != nil {
		return err
	}
	fmt.Printf("wordcount running on %s; counts go to %s; Ctrl-C stops\n", strings.Join(brokers, ","), countsTopic)
	err = app.Run(ctx)
	s := app.Stats()
	fmt.Printf("stopped: %d records in, %d out, %d restored\n", s.RecordsIn, s.RecordsOut, s.Restored)
	return err
}

func printCounts(counts map[string]int64) {
	words := make([]string, 0, len(counts))
	for w := range counts {
		words = append(words, w)
	}
	sort.Slice(words, func(i, j int) bool {
		if counts[words[i]] != counts[words[j]] {
			return counts[words[i]] > counts[words[j]]
		}
		return words[i] < words[j]
	})
	fmt.Println("final word counts:")
	for _, w := range words {
		fmt.Printf("  %-12s %d\n", w, counts[w])
	}
}
