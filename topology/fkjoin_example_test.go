package topology_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
	"github.com/weirstream/weir/topologytest"
)

// Orders enriched with their customer's name: each order names its
// customer, and a customer's update reaches every order of theirs.
func ExampleJoinTablesOnForeignKey() {
	b := topology.NewBuilder()
	orders := topology.NewTable(b, "orders", serde.String(), serde.String()) // "<customer>|<item>"
	customers := topology.NewTable(b, "customers", serde.String(), serde.String(), topology.Materialized("customers"))
	customerOf := func(_, order string) string { c, _, _ := strings.Cut(order, "|"); return c }
	topology.JoinTablesOnForeignKey(orders, customers, customerOf,
		func(order, name string) string { return name + " ordered " + order }).ToStream().To("enriched")
	topo, _ := b.Build()

	d, _ := topologytest.New(topo, topologytest.Config{})
	defer d.Close()
	o := topologytest.Input(d, "orders", serde.String(), serde.String())
	c := topologytest.Input(d, "customers", serde.String(), serde.String())
	_ = c.Pipe("c1", "Ann", time.UnixMilli(1))
	_ = o.Pipe("o1", "c1|pen", time.UnixMilli(2))
	_ = o.Pipe("o2", "c1|ink", time.UnixMilli(3))
	_ = c.Pipe("c1", "Ann B.", time.UnixMilli(4))
	out, _ := topologytest.Output(d, "enriched", serde.String(), serde.String()).ReadKeyValues()
	for _, kv := range out {
		fmt.Println(kv.Key, kv.Value)
	}
	// Output:
	// o1 Ann ordered c1|pen
	// o2 Ann ordered c1|ink
	// o1 Ann B. ordered c1|pen
	// o2 Ann B. ordered c1|ink
}
