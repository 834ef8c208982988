// Command orders is a Kafka Streams application ported to weir: orders
// joined to their customers by a foreign key, revenue per region kept right
// through cancellations and customers moving, and an hourly report of
// orders per region. The topology is in package pipeline; README.md sets it
// beside the Kafka Streams original.
//
//	go run ./examples/orders                          # embedded broker, the README's input, prints every output, exits
//	go run ./examples/orders -brokers localhost:9092  # a real cluster, runs until interrupted
//
// Without -brokers it starts an in-process Kafka broker, runs the
// application, and writes the demo input one record at a time: after each
// record it waits until the application has committed it (and everything
// it caused on the internal topics), then prints the record and the
// outputs it caused. The printout is the one README.md shows, equal to
// Kafka Streams' on the same input. With -brokers it creates the topics
// if needed, writes the demo input only if -demo is given (all at once),
// and runs until interrupted (SIGINT/SIGTERM).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/embedded"
	"github.com/weirstream/weir/examples/orders/pipeline"
)

const appID = "orders"

func main() {
	brokers := flag.String("brokers", "", "Kafka bootstrap servers (host:port,...); empty starts an embedded broker")
	demo := flag.Bool("demo", false, "with -brokers: write the demo input to "+pipeline.Customers+" and "+pipeline.Orders)
	stateDir := flag.String("state-dir", filepath.Join(os.TempDir(), "weir-orders"), "with -brokers: the instance's state `directory` (one per instance)")
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
		err = runDemo(ctx, log, os.Stdout)
	} else {
		err = runCluster(ctx, log, strings.Split(*brokers, ","), *demo, *stateDir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "orders:", err)
		os.Exit(1)
	}
}

func newApp(brokers []string, log *slog.Logger, stateDir string) (*weir.App, error) {
	topo, err := pipeline.Topology()
	if err != nil {
		return nil, err
	}
	return weir.New(topo,
		weir.WithBrokers(brokers...),
		weir.WithApplicationID(appID),
		weir.WithStateDir(stateDir),
		weir.WithLogger(log),
		weir.WithEpochInterval(50*time.Millisecond),
		weir.WithSessionTimeout(10*time.Second),
		weir.WithHeartbeatInterval(time.Second),
	)
}

// allTopics are the application's input and output topics.
var allTopics = append([]string{pipeline.Customers, pipeline.Orders}, pipeline.Outputs...)

// runDemo runs everything in the process and prints the demo input with
// the outputs each record caused to out.
func runDemo(ctx context.Context, log *slog.Logger, out io.Writer) error {
	// One partition per topic, so that the printout reads in the order of
	// the input; the application does not depend on it.
	parts := map[string]int32{}
	for _, t := range allTopics {
		parts[t] = 1
	}
	broker, err := embedded.Start(ctx, embedded.Options{Topics: parts})
	if err != nil {
		return err
	}
	defer broker.Close()
	fmt.Fprintf(os.Stderr, "embedded Kafka broker on %s\n", strings.Join(broker.Addrs(), ","))

	client, err := newClient(broker.Addrs())
	if err != nil {
		return err
	}
	defer client.Close()

	// A fresh broker needs fresh local state: the stores' checkpoints are
	// offsets in this cluster's changelogs.
	stateDir, err := os.MkdirTemp("", "weir-orders-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stateDir)
	app, err := newApp(broker.Addrs(), log, stateDir)
	if err != nil {
		return err
	}
	sources, err := sourceTopics()
	if err != nil {
		return err
	}
	outputs, err := client.follow(pipeline.Outputs)
	if err != nil {
		return err
	}
	defer outputs.Close()

	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- app.Run(runCtx) }()
	err = feed(ctx, client, outputs, sources, out)
	cancel()
	return errors.Join(err, <-done)
}

// feed writes the demo input one record at a time, waits until the
// application has committed it, and prints it with the outputs it caused.
func feed(ctx context.Context, client *client, outputs *follower, sources []string, out io.Writer) error {
	for _, in := range demoInput {
		if err := client.produce(in); err != nil {
			return err
		}
		if err := client.waitCommitted(ctx, appID, sources, time.Minute); err != nil {
			return fmt.Errorf("after %s: %w", in, err)
		}
		fmt.Fprintln(out, in)
		recs, err := outputs.readToEnd(ctx, time.Minute)
		if err != nil {
			return err
		}
		for _, r := range recs {
			fmt.Fprintln(out, r)
		}
	}
	return nil
}

// sourceTopics are every topic the application reads, internal topics
// included, as named on the broker.
func sourceTopics() ([]string, error) {
	topo, err := pipeline.Topology()
	if err != nil {
		return nil, err
	}
	var topics []string
	for _, st := range topo.Graph().Subtopologies {
		for _, ref := range st.SourceTopics() {
			topics = append(topics, ref.Resolve(appID))
		}
	}
	return topics, nil
}

// runCluster runs one instance against a real cluster until interrupted.
func runCluster(ctx context.Context, log *slog.Logger, brokers []string, demo bool, stateDir string) error {
	client, err := newClient(brokers)
	if err != nil {
		return err
	}
	defer client.Close()
	if err := client.ensureTopics(1, allTopics...); err != nil {
		return err
	}
	if demo {
		for _, in := range demoInput {
			if err := client.produce(in); err != nil {
				return err
			}
		}
		fmt.Printf("wrote %d records to %s and %s\n", len(demoInput), pipeline.Customers, pipeline.Orders)
	}
	app, err := newApp(brokers, log, stateDir)
	if err != nil {
		return err
	}
	fmt.Printf("orders running on %s; outputs go to %s; Ctrl-C stops\n", strings.Join(brokers, ","), strings.Join(pipeline.Outputs, ", "))
	err = app.Run(ctx)
	s := app.Stats()
	fmt.Printf("stopped: %d records in, %d out, %d restored\n", s.RecordsIn, s.RecordsOut, s.Restored)
	return err
}
