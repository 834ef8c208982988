// Command dashboard counts words with weir, shows the application's status
// page and answers queries about the counts over HTTP: two instances share
// the partitions, each answers for every word (forwarding to the instance
// that counts it), and each serves the status page of the whole group at
// its root, http://127.0.0.1:8080/.
//
//	go run ./examples/dashboard                          # embedded broker, demo text written on and on; serves until Ctrl-C
//	go run ./examples/dashboard -brokers localhost:9092  # a real cluster (add -demo to write the demo text)
//
// The instances listen on 127.0.0.1:8080 and 127.0.0.1:8081 (-http, -http2);
// -rate sets how many demo lines a second are written after the first
// pass (0: none). See README.md for the curl lines to try.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/IBM/sarama"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/embedded"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

const (
	textTopic   = "dashboard-text"
	countsTopic = "dashboard-counts"
	partitions  = 4
)

var demoText = []string{
	"the stream is the table and the table is the stream",
	"a stream of changes makes a table and a table makes a stream of changes",
	"every record is processed and every count is exact",
	"ask any instance and the owner of the word answers",
}

// options configure a run.
type options struct {
	brokers   []string // empty: an embedded broker
	demo      bool     // write the demo text (always with the embedded broker)
	httpAddrs []string // one instance per address
	rate      int      // demo lines a second written once ready (0: none)
	stateDir  string
	log       *slog.Logger
}

func main() {
	brokers := flag.String("brokers", "", "Kafka bootstrap servers (host:port,...); empty starts an embedded broker")
	demo := flag.Bool("demo", false, "with -brokers: write the demo text to "+textTopic)
	addr1 := flag.String("http", "127.0.0.1:8080", "HTTP address of the first instance")
	addr2 := flag.String("http2", "127.0.0.1:8081", "HTTP address of the second instance (empty: run one)")
	rate := flag.Int("rate", 20, "demo lines a second written once the instances are ready, so the status page's charts move (0: none)")
	verbose := flag.Bool("v", false, "log at debug level")
	flag.Parse()
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	opts := options{demo: *demo, rate: *rate, httpAddrs: []string{*addr1}, log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))}
	if *addr2 != "" {
		opts.httpAddrs = append(opts.httpAddrs, *addr2)
	}
	if *brokers != "" {
		opts.brokers = strings.Split(*brokers, ",")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, opts, func(addrs []string) {
		fmt.Printf("instances serving on %s\n", strings.Join(addrs, " and "))
		fmt.Printf("the status page of the group: http://%s/\n", addrs[0])
		fmt.Printf("queries: the curl lines of examples/dashboard/README.md, e.g.\n")
		fmt.Printf("  curl -s http://%s/stores/counts/keys/stream\n", addrs[0])
		fmt.Println("Ctrl-C stops.")
	}); err != nil {
		fmt.Fprintln(os.Stderr, "dashboard:", err)
		os.Exit(1)
	}
}

// wordCount splits lines into lowercase words and counts them per word in
// the store "counts".
func wordCount() (*topology.Topology, error) {
	b := topology.NewBuilder()
	lines := topology.NewStream(b, textTopic, serde.String(), serde.String())
	words := topology.FlatMapValues(lines, func(line string) []string { return strings.Fields(strings.ToLower(line)) })
	topology.GroupBy(words, func(_, w string) string { return w }, topology.Named("words")).
		Count(topology.Materialized("counts")).
		ToStream().To(countsTopic)
	return b.Build()
}

// run starts the broker (if embedded) and the instances, calls ready with
// their HTTP addresses once every demo word can be queried, and serves
// until ctx is done.
func run(ctx context.Context, o options, ready func(addrs []string)) error {
	brokers := o.brokers
	if len(brokers) == 0 {
		broker, err := embedded.Start(ctx, embedded.Options{Topics: map[string]int32{textTopic: partitions, countsTopic: partitions}})
		if err != nil {
			return err
		}
		defer broker.Close()
		brokers, o.demo = broker.Addrs(), true
		// A fresh broker needs fresh local state.
		dir, err := os.MkdirTemp("", "weir-dashboard-*")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		o.stateDir = dir
	} else if o.stateDir == "" {
		o.stateDir = os.TempDir()
	}
	if err := prepareInput(brokers, o.demo); err != nil {
		return err
	}
	topo, err := wordCount()
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var apps []*weir.App
	done := make(chan error, len(o.httpAddrs))
	for i, addr := range o.httpAddrs {
		app, err := weir.New(topo,
			weir.WithBrokers(brokers...),
			weir.WithApplicationID("dashboard"),
			weir.WithStateDir(fmt.Sprintf("%s/weir-dashboard-%d", o.stateDir, i)),
			weir.WithGuarantee(weir.ExactlyOnce),
			weir.WithHTTP(addr),
			weir.WithLogger(o.log),
			weir.WithSessionTimeout(10*time.Second),
			weir.WithHeartbeatInterval(time.Second),
		)
		if err != nil {
			return err
		}
		apps = append(apps, app)
		go func() { done <- app.Run(runCtx) }()
	}
	var errs []error
	stopAll := func() error {
		cancel()
		for range apps {
			errs = append(errs, <-done)
		}
		return errors.Join(errs...)
	}
	want := demoCounts()
	if len(o.brokers) > 0 {
		want = nil // a real cluster's topic may hold more than the demo text
	}
	addrs, err := waitReady(runCtx, apps, done, want)
	if err != nil {
		return errors.Join(err, stopAll())
	}
	ready(addrs)
	if o.demo && o.rate > 0 {
		go func() {
			if err := writeOn(runCtx, brokers, o.rate); err != nil && runCtx.Err() == nil {
				o.log.Warn("dashboard: writing demo text", "err", err)
			}
		}()
	}
	<-ctx.Done()
	return stopAll()
}

// waitReady waits until every instance serves HTTP and answers every word
// of want with its count, and says on /readyz that it is ready (no
// partition of it still restoring after the last rebalance).
func waitReady(ctx context.Context, apps []*weir.App, done <-chan error, want map[string]int64) ([]string, error) {
	deadline := time.After(90 * time.Second)
	for {
		select {
		case err := <-done:
			return nil, fmt.Errorf("an instance stopped: %w", err)
		case <-deadline:
			return nil, errors.New("the counts never became queryable")
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		addrs := make([]string, 0, len(apps))
		for _, a := range apps {
			if a.HTTPAddr() != "" {
				addrs = append(addrs, a.HTTPAddr())
			}
		}
		if len(addrs) == len(apps) && allReady(addrs) && answers(addrs, want) {
			return addrs, nil
		}
	}
}

// allReady reports whether every instance answers /readyz with 200.
func allReady(addrs []string) bool {
	for _, addr := range addrs {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false
		}
	}
	return true
}

func answers(addrs []string, want map[string]int64) bool {
	for _, addr := range addrs {
		for w, n := range want {
			resp, err := http.Get("http://" + addr + "/stores/counts/keys/" + w)
			if err != nil {
				return false
			}
			var r struct{ Value int64 }
			err = json.NewDecoder(resp.Body).Decode(&r)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK || r.Value != n {
				return false
			}
		}
	}
	return true
}

// demoCounts counts the demo text's words.
func demoCounts() map[string]int64 {
	m := map[string]int64{}
	for _, line := range demoText {
		for _, w := range strings.Fields(strings.ToLower(line)) {
			m[w]++
		}
	}
	return m
}

// writeOn writes the demo text again and again, rate lines a second, until
// ctx ends: the word count keeps running and the status page's charts move.
func writeOn(ctx context.Context, brokers []string, rate int) error {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	producer, err := sarama.NewSyncProducer(brokers, cfg)
	if err != nil {
		return err
	}
	defer producer.Close()
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		line := demoText[i%len(demoText)]
		msg := &sarama.ProducerMessage{Topic: textTopic, Key: sarama.StringEncoder(fmt.Sprint(i)), Value: sarama.StringEncoder(line)}
		if _, _, err := producer.SendMessage(msg); err != nil {
			return err
		}
	}
}

// prepareInput creates the topics if needed and writes the demo text, with
// the example's own Kafka client (another service's producer).
func prepareInput(brokers []string, demo bool) error {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	client, err := sarama.NewClient(brokers, cfg)
	if err != nil {
		return fmt.Errorf("connect to %v: %w", brokers, err)
	}
	defer client.Close()
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		return err
	}
	for _, t := range []string{textTopic, countsTopic} {
		err := admin.CreateTopic(t, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: -1}, false)
		if err != nil && !errors.Is(err, sarama.ErrTopicAlreadyExists) {
			return fmt.Errorf("create %s: %w", t, err)
		}
	}
	if !demo {
		return nil
	}
	producer, err := sarama.NewSyncProducerFromClient(client)
	if err != nil {
		return err
	}
	defer producer.Close()
	for i, line := range demoText {
		msg := &sarama.ProducerMessage{Topic: textTopic, Key: sarama.StringEncoder(fmt.Sprint(i)), Value: sarama.StringEncoder(line)}
		if _, _, err := producer.SendMessage(msg); err != nil {
			return fmt.Errorf("write demo text: %w", err)
		}
	}
	return nil
}
