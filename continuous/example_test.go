package continuous_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/embedded"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

// Example runs a topology in the continuous mode, exactly-once, on an
// in-process broker: each record is processed as it arrives, and every
// epoch (100 ms) commits its outputs and input offsets in one transaction.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	broker, err := embedded.Start(ctx, embedded.Options{Topics: map[string]int32{"lines": 1, "shouts": 1}})
	if err != nil {
		log.Fatal(err)
	}
	defer broker.Close()

	// Two input records, written by any Kafka client.
	client, err := kgo.NewClient(kgo.SeedBrokers(broker.Addrs()...))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	err = client.ProduceSync(ctx,
		&kgo.Record{Topic: "lines", Value: []byte("hello")},
		&kgo.Record{Topic: "lines", Value: []byte("weir")}).FirstErr()
	if err != nil {
		log.Fatal(err)
	}

	// The topology prints what it writes; the run stops after two records.
	run, stop := context.WithCancel(ctx)
	defer stop()
	seen := 0
	b := topology.NewBuilder()
	lines := topology.NewStream(b, "lines", serde.String(), serde.String())
	topology.MapValues(lines, strings.ToUpper).
		Peek(func(_, v string) {
			fmt.Println(v)
			if seen++; seen == 2 {
				stop()
			}
		}).
		To("shouts")
	topo, err := b.Build()
	if err != nil {
		log.Fatal(err)
	}

	stateDir, err := os.MkdirTemp("", "weir-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(stateDir)
	app, err := weir.New(topo,
		weir.WithBrokers(broker.Addrs()...),
		weir.WithApplicationID("shout"),
		weir.WithStateDir(stateDir),
		weir.WithMode(weir.Continuous),               // the default
		weir.WithEpochInterval(100*time.Millisecond), // the default
		weir.WithGuarantee(weir.ExactlyOnce),
		weir.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		log.Fatal(err)
	}
	// Run returns once run is done, after committing the last epoch.
	if err := app.Run(run); err != nil {
		log.Fatal(err)
	}
	fmt.Println("stopped")
	// Output:
	// HELLO
	// WEIR
	// stopped
}
