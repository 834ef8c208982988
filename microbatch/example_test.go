package microbatch_test

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
	"github.com/weirstream/weir/microbatch"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

// Example runs a bounded batch job on an in-process broker: AvailableNow
// processes everything in the input at start, in batches of at most two
// records, and Run returns. The sink's records go to ForEachBatch instead
// of Kafka.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	broker, err := embedded.Start(ctx, embedded.Options{Topics: map[string]int32{"lines": 1}})
	if err != nil {
		log.Fatal(err)
	}
	defer broker.Close()

	client, err := kgo.NewClient(kgo.SeedBrokers(broker.Addrs()...))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	var input []*kgo.Record
	for _, line := range []string{"a", "b", "c"} {
		input = append(input, &kgo.Record{Topic: "lines", Value: []byte(line)})
	}
	if err := client.ProduceSync(ctx, input...).FirstErr(); err != nil {
		log.Fatal(err)
	}

	b := topology.NewBuilder()
	lines := topology.NewStream(b, "lines", serde.String(), serde.String())
	topology.MapValues(lines, strings.ToUpper).To("upper")
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
		weir.WithApplicationID("report"),
		weir.WithStateDir(stateDir),
		weir.WithMicroBatch(microbatch.Config{
			Trigger:            microbatch.AvailableNow(),
			MaxRecordsPerBatch: 2,
			// Called once per batch, and again with the same id and
			// records if the batch is replayed: write idempotently by id.
			ForEachBatch: func(_ context.Context, id int64, records []microbatch.Record) error {
				for _, r := range records {
					fmt.Printf("batch %d: %s %s\n", id, r.Topic, r.Value)
				}
				return nil
			},
		}),
		weir.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		log.Fatal(err)
	}
	if err := app.Run(ctx); err != nil { // returns when the input is processed
		log.Fatal(err)
	}
	fmt.Println("done")
	// Output:
	// batch 0: upper A
	// batch 0: upper B
	// batch 1: upper C
	// done
}
