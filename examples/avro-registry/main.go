// Command avro-registry runs a topology over Avro records in the Confluent
// wire format, with their schemas in a Schema Registry: the one at
// SCHEMA_REGISTRY_URL (Confluent Schema Registry, Karapace, Apicurio's
// /apis/ccompat/v7), or an in-memory one when it is unset.
//
//	go run ./examples/avro-registry                                               # in-memory registry
//	SCHEMA_REGISTRY_URL=http://localhost:8081 go run ./examples/avro-registry     # a real registry
//
// It starts an in-process Kafka broker and writes clicks to avro-clicks with
// two versions of the Click schema, as two generations of a producer would:
// version 1 (user, page) and version 2, which adds an optional referrer. Both
// register under the subject avro-clicks-value; a registry that checks
// compatibility accepts version 2 as BACKWARD compatible. The topology reads
// every click as a version 2 click (serde.WithSchemaResolution: the id in
// each record names the schema that wrote it, and a version 1 click gets the
// referrer's default, null), and writes a PageView record to
// avro-page-views, registered under avro-page-views-value. The example reads the page views back through the
// registry, prints them and exits 0.
//
// SCHEMA_REGISTRY_USER and SCHEMA_REGISTRY_PASSWORD, if set, are sent as
// basic authentication.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/IBM/sarama"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/embedded"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/serde/registry"
	"github.com/weirstream/weir/topology"
)

const (
	clicksTopic = "avro-clicks"
	viewsTopic  = "avro-page-views"
	partitions  = 2
)

// The two versions of the input's schema, and the output's.
const (
	clickV1 = `{"type": "record", "name": "Click", "namespace": "weir.example",
  "fields": [
    {"name": "user", "type": "string"},
    {"name": "page", "type": "string"}
  ]}`
	clickV2 = `{"type": "record", "name": "Click", "namespace": "weir.example",
  "fields": [
    {"name": "user", "type": "string"},
    {"name": "page", "type": "string"},
    {"name": "referrer", "type": ["null", "string"], "default": null}
  ]}`
	pageViewSchema = `{"type": "record", "name": "PageView", "namespace": "weir.example",
  "fields": [
    {"name": "user", "type": "string"},
    {"name": "page", "type": "string"},
    {"name": "referrer", "type": "string"}
  ]}`
)

// click is one input record and the schema version its producer writes.
type click struct {
	version              int
	user, page, referrer string
}

var demoClicks = []click{
	{1, "ann", "/home", ""},
	{1, "bob", "/pricing", ""},
	{1, "ann", "/docs", ""},
	{2, "cyd", "/home", "search"},
	{2, "bob", "/signup", "/pricing"},
	{2, "ann", "/docs/serde", ""},
}

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := runDemo(ctx, log, os.Stdout, os.Getenv("SCHEMA_REGISTRY_URL")); err != nil {
		fmt.Fprintln(os.Stderr, "avro-registry:", err)
		os.Exit(1)
	}
}

// newResolver returns the registry client for url, or an in-memory registry
// if url is empty.
func newResolver(url string) (serde.SchemaResolver, string, error) {
	if url == "" {
		return serde.NewMemoryRegistry(), "in memory (set SCHEMA_REGISTRY_URL for a real one)", nil
	}
	var opts []registry.Option
	if user := os.Getenv("SCHEMA_REGISTRY_USER"); user != "" {
		opts = append(opts, registry.WithBasicAuth(user, os.Getenv("SCHEMA_REGISTRY_PASSWORD")))
	}
	c, err := registry.New(url, opts...)
	if err != nil {
		return nil, "", err
	}
	return c, url, nil
}

// pageViews is the topology: every click, read as a version 2 click
// whichever version wrote it, becomes a PageView.
func pageViews(resolver serde.SchemaResolver) (*topology.Topology, error) {
	clicks, err := serde.NewConfluentAvro(resolver, clickV2, serde.WithSchemaResolution())
	if err != nil {
		return nil, err
	}
	views, err := serde.NewConfluentAvro(resolver, pageViewSchema)
	if err != nil {
		return nil, err
	}
	b := topology.NewBuilder()
	in := topology.NewStream(b, clicksTopic, serde.String(), clicks)
	topology.MapValues(in, func(c map[string]any) map[string]any {
		view := map[string]any{"user": c["user"], "page": c["page"], "referrer": "-"}
		if r, ok := c["referrer"].(map[string]any); ok { // the union's string branch; nil for null
			view["referrer"] = r["string"]
		}
		return view
	}).WithValueSerde(views).To(viewsTopic)
	return b.Build()
}

// runDemo runs everything on an embedded broker and prints the page views
// to out.
func runDemo(ctx context.Context, log *slog.Logger, out io.Writer, registryURL string) error {
	resolver, where, err := newResolver(registryURL)
	if err != nil {
		return err
	}
	broker, err := embedded.Start(ctx, embedded.Options{
		Topics: map[string]int32{clicksTopic: partitions, viewsTopic: partitions},
	})
	if err != nil {
		return err
	}
	defer broker.Close()
	fmt.Fprintf(out, "embedded Kafka broker on %s\nschema registry: %s\n", strings.Join(broker.Addrs(), ","), where)

	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	client, err := sarama.NewClient(broker.Addrs(), cfg)
	if err != nil {
		return err
	}
	defer client.Close()
	if err := produceClicks(client, resolver, out); err != nil {
		return err
	}

	topo, err := pageViews(resolver)
	if err != nil {
		return err
	}
	stateDir, err := os.MkdirTemp("", "weir-avro-registry-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stateDir)
	app, err := weir.New(topo,
		weir.WithBrokers(broker.Addrs()...),
		weir.WithApplicationID("avro-registry"),
		weir.WithStateDir(stateDir),
		weir.WithLogger(log),
		weir.WithSessionTimeout(10*time.Second),
		weir.WithHeartbeatInterval(time.Second),
	)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- app.Run(runCtx) }()

	views, readErr := readViews(ctx, client, resolver, len(demoClicks), 60*time.Second)
	cancel()
	if err := <-done; err != nil {
		return errors.Join(readErr, err)
	}
	if readErr != nil {
		return readErr
	}
	fmt.Fprintf(out, "read %d page views from %s:\n", len(views), viewsTopic)
	for _, v := range views {
		fmt.Fprintf(out, "  %-4s %-12s referrer %s\n", v["user"], v["page"], v["referrer"])
	}
	return nil
}

// produceClicks writes the demo clicks, each with its version's serde.
func produceClicks(client sarama.Client, resolver serde.SchemaResolver, out io.Writer) error {
	writers := map[int]serde.Serde[map[string]any]{}
	for v, schema := range map[int]string{1: clickV1, 2: clickV2} {
		s, err := serde.NewConfluentAvro(resolver, schema)
		if err != nil {
			return err
		}
		writers[v] = s
	}
	p, err := sarama.NewSyncProducerFromClient(client)
	if err != nil {
		return err
	}
	defer p.Close()
	ids := map[int]int32{}
	for _, c := range demoClicks {
		rec := map[string]any{"user": c.user, "page": c.page}
		if c.version == 2 {
			rec["referrer"] = nil
			if c.referrer != "" {
				rec["referrer"] = map[string]any{"string": c.referrer}
			}
		}
		b, err := writers[c.version].Serialize(clicksTopic, rec)
		if err != nil {
			return err
		}
		ids[c.version], _, _ = serde.ParseWireHeader(b)
		_, _, err = p.SendMessage(&sarama.ProducerMessage{
			Topic: clicksTopic, Key: sarama.StringEncoder(c.user), Value: sarama.ByteEncoder(b),
		})
		if err != nil {
			return fmt.Errorf("produce to %s: %w", clicksTopic, err)
		}
	}
	fmt.Fprintf(out, "wrote %d clicks to %s: Click v1 as schema id %d, Click v2 as schema id %d (subject %s-value)\n",
		len(demoClicks), clicksTopic, ids[1], ids[2], clicksTopic)
	return nil
}

// readViews reads want page views from the output, decoding them through
// the registry, sorted by user and page.
func readViews(ctx context.Context, client sarama.Client, resolver serde.SchemaResolver, want int, timeout time.Duration) ([]map[string]any, error) {
	views, err := serde.NewConfluentAvro(resolver, pageViewSchema)
	if err != nil {
		return nil, err
	}
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		return nil, err
	}
	defer consumer.Close()
	parts, err := client.Partitions(viewsTopic)
	if err != nil {
		return nil, err
	}
	msgs := make(chan *sarama.ConsumerMessage)
	stop := make(chan struct{})
	defer close(stop)
	for _, p := range parts {
		pc, err := consumer.ConsumePartition(viewsTopic, p, sarama.OffsetOldest)
		if err != nil {
			return nil, err
		}
		defer pc.Close()
		go func() {
			for m := range pc.Messages() {
				select {
				case msgs <- m:
				case <-stop:
					return
				}
			}
		}()
	}
	var got []map[string]any
	deadline := time.After(timeout)
	for len(got) < want {
		select {
		case m := <-msgs:
			v, err := views.Deserialize(viewsTopic, m.Value)
			if err != nil {
				return nil, err
			}
			got = append(got, v)
		case <-deadline:
			return nil, fmt.Errorf("%d of %d page views after %v", len(got), want, timeout)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	slices.SortFunc(got, func(a, b map[string]any) int {
		return strings.Compare(fmt.Sprint(a["user"], a["page"]), fmt.Sprint(b["user"], b["page"]))
	})
	return got, nil
}
