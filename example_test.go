package weir_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/IBM/sarama"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/embedded"
	"github.com/weirstream/weir/microbatch"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
	"github.com/weirstream/weir/topologytest"
)

// The examples run on an in-process Kafka broker (package embedded); point
// weir.WithBrokers at a real cluster instead and nothing else changes.

// exampleTopology is the topology of the examples: lines in, the running count
// of every word out, and a queryable store "counts".
func exampleTopology() (*topology.Topology, error) {
	b := topology.NewBuilder()
	lines := topology.NewStream(b, "text", serde.String(), serde.String())
	words := topology.FlatMapValues(lines, strings.Fields)
	topology.GroupBy(words, func(_, w string) string { return w }).
		Count(topology.Materialized("counts")).
		ToStream().To("word-counts")
	return b.Build()
}

// One instance: start it, feed it lines, ask its HTTP endpoint for a count.
func ExampleApp() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	broker, err := embedded.Start(ctx, embedded.Options{Topics: map[string]int32{"text": 4, "word-counts": 4}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer broker.Close()
	if err := writeLines(broker.Addrs(), "text", "to be or not to be", "that is the question"); err != nil {
		fmt.Println(err)
		return
	}

	topo, err := exampleTopology()
	if err != nil {
		fmt.Println(err)
		return
	}
	stateDir, _ := os.MkdirTemp("", "weir-example-*")
	defer os.RemoveAll(stateDir)
	app, err := weir.New(topo,
		weir.WithBrokers(broker.Addrs()...),
		weir.WithApplicationID("wordcount"), // the consumer group; instances share its partitions
		weir.WithStateDir(stateDir),         // the instance's local state
		weir.WithHTTP("127.0.0.1:0"),        // interactive queries on a free port
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- app.Run(runCtx) }() // Run returns when runCtx is done

	answer, err := askCount(ctx, app, "be", 2) // GET /stores/counts/keys/be
	fmt.Println(answer.Key, answer.Value, err)

	stop() // a graceful stop: the last epoch commits
	fmt.Println("stopped:", <-done)
	// Output:
	// be 2 <nil>
	// stopped: <nil>
}

// Two instances of one application form one consumer group and share the
// partitions of its topics (app.Metrics() has a lag series per partition
// an instance consumes); each answers a query for any key, from its own
// state or by forwarding to the instance that owns the key's partition.
func ExampleApp_twoInstances() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	broker, err := embedded.Start(ctx, embedded.Options{Topics: map[string]int32{"text": 4, "word-counts": 4}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer broker.Close()
	text := []string{"the stream is the table", "and the table is the stream", "ask any instance"}
	if err := writeLines(broker.Addrs(), "text", text...); err != nil {
		fmt.Println(err)
		return
	}
	topo, err := exampleTopology()
	if err != nil {
		fmt.Println(err)
		return
	}

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 2)
	var apps []*weir.App
	for range 2 {
		stateDir, _ := os.MkdirTemp("", "weir-example-*")
		defer os.RemoveAll(stateDir)
		app, err := weir.New(topo,
			weir.WithBrokers(broker.Addrs()...),
			weir.WithApplicationID("wordcount"), // the same application: one consumer group
			weir.WithStateDir(stateDir),         // one state directory per instance
			weir.WithHTTP("127.0.0.1:0"),
			weir.WithSessionTimeout(6*time.Second), // quicker rebalances than the default 45 s
			weir.WithHeartbeatInterval(500*time.Millisecond),
		)
		if err != nil {
			fmt.Println(err)
			return
		}
		apps = append(apps, app)
		go func() { done <- app.Run(runCtx) }()
	}

	// The group spreads the 8 partitions (4 of "text", 4 of the
	// repartition topic before the count) over the two instances.
	for ctx.Err() == nil && !(owned(apps[0]) == 4 && owned(apps[1]) == 4) {
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Println("partitions:", owned(apps[0]), "+", owned(apps[1]))

	// Either instance answers for any word: from its own state, or by
	// forwarding to the owner of the word's partition (servedBy).
	the, err := askCount(ctx, apps[0], "the", 4)
	fmt.Println("first instance:", the.Key, the.Value, err)
	the, err = askCount(ctx, apps[1], "the", 4)
	fmt.Println("second instance:", the.Key, the.Value, err)

	stop()
	fmt.Println(<-done, <-done)
	// Output:
	// partitions: 4 + 4
	// first instance: the 4 <nil>
	// second instance: the 4 <nil>
	// <nil> <nil>
}

// The micro-batch mode with the AvailableNow trigger is a batch job over
// the same topology: Run processes everything in the topics at start and
// returns. ForEachBatch receives what the sinks write instead of Kafka.
func ExampleWithMicroBatch() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	broker, err := embedded.Start(ctx, embedded.Options{Topics: map[string]int32{"text": 4, "word-counts": 4}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer broker.Close()
	if err := writeLines(broker.Addrs(), "text", "to be or not to be"); err != nil {
		fmt.Println(err)
		return
	}
	topo, err := exampleTopology()
	if err != nil {
		fmt.Println(err)
		return
	}
	stateDir, _ := os.MkdirTemp("", "weir-example-*")
	defer os.RemoveAll(stateDir)

	final := map[string]int64{} // the last count written for every word
	app, err := weir.New(topo,
		weir.WithBrokers(broker.Addrs()...),
		weir.WithApplicationID("report"),
		weir.WithStateDir(stateDir),
		weir.WithGuarantee(weir.ExactlyOnce),
		weir.WithMicroBatch(microbatch.Config{
			Trigger: microbatch.AvailableNow(),
			ForEachBatch: func(_ context.Context, batchID int64, records []microbatch.Record) error {
				for _, r := range records {
					n, err := serde.Int64().Deserialize(r.Topic, r.Value)
					if err != nil {
						return err
					}
					final[string(r.Key)] = n
				}
				return nil
			},
		}),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("run:", app.Run(ctx)) // returns once everything available at start is processed
	fmt.Println(final)
	// Output:
	// run: <nil>
	// map[be:2 not:1 or:1 to:2]
}

// The README's sketch of the DSL. Build validates the whole topology and
// reports every mistake at once; Describe prints its sub-topologies.
func Example_topology() {
	b := topology.NewBuilder()
	lines := topology.NewStream(b, "text", serde.String(), serde.String())
	words := topology.FlatMapValues(lines, strings.Fields)
	counts := topology.GroupBy(words, func(_, w string) string { return w }).
		Count(topology.Materialized("counts"))
	counts.ToStream().To("word-counts")
	topo, err := b.Build() // validates; every mistake reported at once, nothing panics
	fmt.Print(topo.Describe())
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// Topologies:
	//    Sub-topology: 0
	//     Source: KSTREAM-SOURCE-0000000000 (topics: [text])
	//       --> KSTREAM-FLATMAPVALUES-0000000001
	//     Processor: KSTREAM-FLATMAPVALUES-0000000001 (stores: [])
	//       --> KSTREAM-KEY-SELECT-0000000002
	//       <-- KSTREAM-SOURCE-0000000000
	//     Processor: KSTREAM-KEY-SELECT-0000000002 (stores: [])
	//       --> KSTREAM-REPARTITION-0000000003-repartition-sink
	//       <-- KSTREAM-FLATMAPVALUES-0000000001
	//     Sink: KSTREAM-REPARTITION-0000000003-repartition-sink (topic: KSTREAM-REPARTITION-0000000003-repartition)
	//       <-- KSTREAM-KEY-SELECT-0000000002
	//
	//   Sub-topology: 1
	//     Source: KSTREAM-REPARTITION-0000000003-repartition-source (topics: [KSTREAM-REPARTITION-0000000003-repartition])
	//       --> KSTREAM-COUNT-0000000006
	//     Processor: KSTREAM-COUNT-0000000006 (stores: [counts])
	//       --> KTABLE-TOSTREAM-0000000007
	//       <-- KSTREAM-REPARTITION-0000000003-repartition-source
	//     Processor: KTABLE-TOSTREAM-0000000007 (stores: [])
	//       --> KSTREAM-SINK-0000000008
	//       <-- KSTREAM-COUNT-0000000006
	//     Sink: KSTREAM-SINK-0000000008 (topic: word-counts)
	//       <-- KTABLE-TOSTREAM-0000000007
}

// The README's sketch of a topology tested in memory with topologytest,
// weir's TopologyTestDriver (errors ignored for brevity).
func Example_topologyTest() {
	topo, err := exampleTopology()
	if err != nil {
		fmt.Println(err)
		return
	}
	d, _ := topologytest.New(topo, topologytest.Config{})
	in := topologytest.Input(d, "text", serde.String(), serde.String())
	out := topologytest.Output(d, "word-counts", serde.String(), serde.Int64())
	_ = in.Pipe("", "to be or not to be", time.UnixMilli(1))
	kvs, _ := out.ReadKeyValues() // [{to 1} {be 1} {or 1} {not 1} {to 2} {be 2}]
	fmt.Println(kvs)
	_ = d.Close()
	// Output: [{to 1} {be 1} {or 1} {not 1} {to 2} {be 2}]
}

// countAnswer is a reply of GET /stores/{store}/keys/{key}.
type countAnswer struct {
	Key      string
	Value    int64
	ServedBy string
}

// askCount asks app for word's count in the store "counts" until the
// answer is want (any answer for want < 0), or ctx is done.
func askCount(ctx context.Context, app *weir.App, word string, want int64) (countAnswer, error) {
	for {
		var a countAnswer
		err := getJSON(app, "/stores/counts/keys/"+word, &a)
		if err == nil && (want < 0 || a.Value == want) {
			return a, nil
		}
		select {
		case <-ctx.Done():
			return a, fmt.Errorf("%s: %w (last: %v)", word, ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// owned counts the partitions app consumes now: the series of its
// weir_partition_lag metric.
func owned(app *weir.App) int {
	families, err := app.Metrics().Gather()
	if err != nil {
		return -1
	}
	for _, f := range families {
		if f.GetName() == "weir_partition_lag" {
			return len(f.GetMetric())
		}
	}
	return 0
}

// getJSON GETs path from app's HTTP endpoints into v.
func getJSON(app *weir.App, path string, v any) error {
	addr := app.HTTPAddr() // empty until the endpoint listens
	if addr == "" {
		return fmt.Errorf("not listening yet")
	}
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// writeLines writes lines to topic, as another service's producer would.
func writeLines(brokers []string, topic string, lines ...string) error {
	cfg := sarama.NewConfig()
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	p, err := sarama.NewSyncProducer(brokers, cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	for _, l := range lines {
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(l)}); err != nil {
			return err
		}
	}
	return nil
}
