// Command eos-transform is an exactly-once Kafka-to-Kafka transform: orders
// arrive as JSON, leave as Avro, and each order appears in the output
// exactly once — even though every epoch is a Kafka transaction that may
// abort and be redone.
//
//	go run ./examples/eos-transform                          # embedded broker: writes orders, verifies, exits
//	go run ./examples/eos-transform -brokers localhost:9092  # a real cluster, runs until interrupted
//
// Records that are not valid JSON orders are bad input: they go, unchanged,
// to the dead-letter topic orders-json-dlq, in the same transaction as the
// offsets that skip them.
//
// Without -brokers it starts an in-process Kafka broker, writes a fixed
// set of orders (a few of them malformed), runs the transform until the
// output holds every order, reads the output and the dead-letter topic as a
// read_committed consumer, checks that every good order is there exactly
// once and every bad one is dead-lettered, prints what it verified and exits
// 0 (1 on any mismatch).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

const (
	inTopic    = "orders-json"
	outTopic   = "orders-avro"
	partitions = 3
)

// orderSchema is the output's Avro schema.
const orderSchema = `{
  "type": "record", "name": "Order", "namespace": "weir.example",
  "fields": [
    {"name": "id", "type": "string"},
    {"name": "customer", "type": "string"},
    {"name": "amount_cents", "type": "long"},
    {"name": "currency", "type": "string"}
  ]
}`

// Order is the JSON input.
type Order struct {
	ID       string  `json:"id"`
	Customer string  `json:"customer"`
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}

// errInvalidOrder marks orders that decode but make no sense.
var errInvalidOrder = errors.New("invalid order")

func main() {
	brokers := flag.String("brokers", "", "Kafka bootstrap servers (host:port,...); empty starts an embedded broker")
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
		var app *weir.App
		if app, err = newApp(strings.Split(*brokers, ","), log, os.TempDir()+"/weir-eos-transform"); err == nil {
			fmt.Printf("eos-transform running: %s (JSON) -> %s (Avro), exactly-once; Ctrl-C stops\n", inTopic, outTopic)
			err = app.Run(ctx)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "eos-transform:", err)
		os.Exit(1)
	}
}

// transform is the topology: JSON order → validated Avro record, keyed by
// order id. A panic-free parse error is a processing error: dead-lettered.
func transform() (*topology.Topology, error) {
	avro, err := serde.NewAvro(orderSchema)
	if err != nil {
		return nil, err
	}
	b := topology.NewBuilder()
	orders := topology.NewStream(b, inTopic, serde.String(), serde.JSON[Order]())
	topology.Process(orders, func() processorOf { return validate{} }).
		WithValueSerde(avro).
		To(outTopic)
	return b.Build()
}

func newApp(brokers []string, log *slog.Logger, stateDir string) (*weir.App, error) {
	topo, err := transform()
	if err != nil {
		return nil, err
	}
	return weir.New(topo,
		weir.WithBrokers(brokers...),
		weir.WithApplicationID("eos-transform"),
		weir.WithStateDir(stateDir),
		weir.WithGuarantee(weir.ExactlyOnce),
		weir.WithBadRecordPolicy(weir.DeadLetter),
		weir.WithLogger(log),
		weir.WithSessionTimeout(10*time.Second),
		weir.WithHeartbeatInterval(time.Second),
	)
}

// demoOrders are the demo's input: good orders and three bad records.
func demoOrders() (good []Order, bad []string) {
	customers := []string{"ada", "grace", "linus", "barbara", "ken"}
	for i := range 60 {
		good = append(good, Order{
			ID: fmt.Sprintf("o-%03d", i), Customer: customers[i%len(customers)],
			Amount: float64(100+i*7) / 4, Currency: "EUR",
		})
	}
	bad = []string{`{"id": "o-bad-1", "amount": "twelve"}`, `not json at all`, `{"id": "o-bad-2", "amount": -5, "currency": "EUR"}`}
	return good, bad
}

func encodeOrder(o Order) string {
	b, _ := json.Marshal(o)
	return string(b)
}
