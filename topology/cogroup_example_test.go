package topology_test

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
	"github.com/weirstream/weir/topologytest"
)

// Clicks (page names) and purchases (amounts in cents) folded into one
// summary per customer: one store, one table.
func ExampleCogroup() {
	b := topology.NewBuilder()
	clicks := topology.NewStream(b, "clicks", serde.String(), serde.String())
	purchases := topology.NewStream(b, "purchases", serde.String(), serde.Int64())
	c := topology.Cogroup(clicks.GroupByKey(), func(_, page, sum string) string { return sum + " " + page })
	c = topology.CogroupWith(c, purchases.GroupByKey(), func(_ string, cents int64, sum string) string {
		return fmt.Sprintf("%s $%d", sum, cents/100)
	})
	c.Aggregate(func() string { return "" }, serde.String(), topology.Materialized("customers")).ToStream().To("summaries")
	topo, _ := b.Build()

	d, _ := topologytest.New(topo, topologytest.Config{})
	defer d.Close()
	_ = topologytest.Input(d, "clicks", serde.String(), serde.String()).Pipe("ann", "/shoes", time.UnixMilli(1))
	_ = topologytest.Input(d, "purchases", serde.String(), serde.Int64()).Pipe("ann", 4200, time.UnixMilli(2))
	out, _ := topologytest.Output(d, "summaries", serde.String(), serde.String()).ReadKeyValues()
	for _, kv := range out {
		fmt.Printf("%s:%s\n", kv.Key, kv.Value)
	}
	// Output:
	// ann: /shoes
	// ann: /shoes $42
}

// A table's updates held for a minute of stream time: a key updated often
// is emitted once a minute, with its latest value.
func ExampleTable_Suppress() {
	b := topology.NewBuilder()
	prices := topology.NewTable(b, "prices", serde.String(), serde.String())
	buf := topology.BufferMaxRecords(10_000).EmitEarlyWhenFull()
	prices.Suppress(topology.UntilTimeLimit(time.Minute, buf)).ToStream().To("prices-per-minute")
	topo, _ := b.Build()

	d, _ := topologytest.New(topo, topologytest.Config{})
	defer d.Close()
	in := topologytest.Input(d, "prices", serde.String(), serde.String())
	at := func(sec int) time.Time { return time.Unix(int64(sec), 0) }
	_ = in.Pipe("ACME", "10.0", at(0))
	_ = in.Pipe("ACME", "10.5", at(20))
	_ = in.Pipe("ACME", "11.0", at(40))
	_ = in.Pipe("INIT", "1.0", at(60)) // stream time 60s: ACME's minute is up
	out, _ := topologytest.Output(d, "prices-per-minute", serde.String(), serde.String()).ReadKeyValues()
	fmt.Println(out)
	// Output:
	// [{ACME 11.0}]
}
