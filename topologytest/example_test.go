package topologytest_test

import (
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
	"github.com/weirstream/weir/topologytest"
)

// Example tests a word count in memory: pipe lines in, read the counts out
// and look into the store.
func Example() {
	b := topology.NewBuilder()
	lines := topology.NewStream(b, "lines", serde.String(), serde.String())
	words := topology.FlatMapValues(lines, strings.Fields)
	topology.GroupBy(words, func(_, w string) string { return w }).
		Count(topology.Materialized("counts")).
		ToStream().To("counts")
	topo, err := b.Build()
	if err != nil {
		log.Fatal(err)
	}

	d, err := topologytest.New(topo, topologytest.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	in := topologytest.Input(d, "lines", serde.String(), serde.String())
	out := topologytest.Output(d, "counts", serde.String(), serde.Int64())
	_ = in.Pipe("", "hello weir", time.UnixMilli(1000))
	_ = in.Pipe("", "hello", time.UnixMilli(2000))

	got, err := out.ReadKeyValues() // every update, in order
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got)

	counts, err := topologytest.KeyValueStore(d, "counts", serde.String(), serde.Int64())
	if err != nil {
		log.Fatal(err)
	}
	n, _, err := counts.Get("hello")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("hello:", n)
	// Output:
	// [{hello 1} {weir 1} {hello 2}]
	// hello: 2
}
