package topology_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
	"github.com/weirstream/weir/topologytest"
)

// Word count: split lines into words, count per word, write the counts.
func Example() {
	b := topology.NewBuilder()
	lines := topology.NewStream(b, "text", serde.String(), serde.String())
	words := topology.FlatMapValues(lines, strings.Fields)
	counts := topology.GroupBy(words, func(_, w string) string { return w }).Count(topology.Materialized("counts"))
	counts.ToStream().To("word-counts")
	topo, err := b.Build()
	if err != nil {
		fmt.Println(err)
		return
	}

	d, _ := topologytest.New(topo, topologytest.Config{})
	defer d.Close()
	in := topologytest.Input(d, "text", serde.String(), serde.String())
	_ = in.Pipe("", "to be or not to be", time.UnixMilli(1))
	out, _ := topologytest.Output(d, "word-counts", serde.String(), serde.Int64()).ReadKeyValues()
	for _, kv := range out {
		fmt.Println(kv.Key, kv.Value)
	}
	// Output:
	// to 1
	// be 1
	// or 1
	// not 1
	// to 2
	// be 2
}

// A per-minute count of page views, emitted once per window when it closes.
func ExampleWindowedBy() {
	b := topology.NewBuilder()
	views := topology.NewStream(b, "page-views", serde.String(), serde.String())
	perMinute := topology.WindowedBy(views.GroupByKey(), topology.TumblingWindows(time.Minute).WithGrace(10*time.Second)).
		Count(topology.EmitFinal())
	topology.SelectKey(perMinute.ToStream(), func(w topology.Windowed[string], _ int64) string {
		return fmt.Sprintf("%s %s", w.Key, w.Start.UTC().Format("15:04"))
	}).To("views-per-minute")
	topo, _ := b.Build()

	d, _ := topologytest.New(topo, topologytest.Config{})
	defer d.Close()
	in := topologytest.Input(d, "page-views", serde.String(), serde.String())
	at := func(min, sec int) time.Time { return time.Date(2026, 1, 1, 12, min, sec, 0, time.UTC) }
	_ = in.Pipe("/home", "v", at(0, 5))
	_ = in.Pipe("/home", "v", at(0, 50))
	_ = in.Pipe("/docs", "v", at(1, 2))
	_ = in.Pipe("/home", "v", at(1, 20)) // closes 12:00 (end 12:01 + 10s grace)
	out, _ := topologytest.Output(d, "views-per-minute", serde.String(), serde.Int64()).ReadKeyValues()
	fmt.Println(out)
	// Output:
	// [{/home 12:00 2}]
}

// A stream enriched with a table: each order picks up its customer's name.
func ExampleJoin() {
	b := topology.NewBuilder()
	orders := topology.NewStream(b, "orders", serde.String(), serde.String())
	customers := topology.NewTable(b, "customers", serde.String(), serde.String(), topology.Materialized("customers"))
	topology.Join(orders, customers, func(id, item, name string) string {
		return name + " bought " + item
	}).To("receipts")
	topo, _ := b.Build()

	d, _ := topologytest.New(topo, topologytest.Config{})
	defer d.Close()
	_ = topologytest.Input(d, "customers", serde.String(), serde.String()).Pipe("c1", "Ada", time.UnixMilli(1))
	_ = topologytest.Input(d, "orders", serde.String(), serde.String()).Pipe("c1", "a lamp", time.UnixMilli(2))
	out, _ := topologytest.Output(d, "receipts", serde.String(), serde.String()).ReadKeyValues()
	fmt.Println(out[0].Value)
	// Output:
	// Ada bought a lamp
}

// Describe shows how Build split the topology into sub-topologies.
func ExampleTopology_Describe() {
	b := topology.NewBuilder()
	topology.NewStream(b, "in", serde.String(), serde.String()).
		Filter(func(_, v string) bool { return v != "" }).
		To("out")
	topo, _ := b.Build()
	fmt.Print(topo.Describe())
	// Output:
	// Topologies:
	//    Sub-topology: 0
	//     Source: KSTREAM-SOURCE-0000000000 (topics: [in])
	//       --> KSTREAM-FILTER-0000000001
	//     Processor: KSTREAM-FILTER-0000000001 (stores: [])
	//       --> KSTREAM-SINK-0000000002
	//       <-- KSTREAM-SOURCE-0000000000
	//     Sink: KSTREAM-SINK-0000000002 (topic: out)
	//       <-- KSTREAM-FILTER-0000000001
}
