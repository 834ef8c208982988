package processor_test

import (
	"fmt"
	"log"
	"time"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore"
	"github.com/weirstream/weir/topology"
	"github.com/weirstream/weir/topologytest"
)

// dedup forwards the first record of each key and drops the others: the
// Processor of the package documentation.
type dedup struct{ seen *statestore.KV[string, int64] }

func (d *dedup) Init(ctx processor.Context[string, string]) error {
	st, err := processor.KeyValueStore(ctx, "seen", serde.String(), serde.Int64())
	d.seen = st
	return err
}

func (d *dedup) Process(ctx processor.Context[string, string], r processor.Record[string, string]) error {
	if _, ok, err := d.seen.Get(r.Key); err != nil || ok {
		return err
	}
	if err := d.seen.Put(r.Key, r.Timestamp.UnixMilli()); err != nil {
		return err
	}
	return ctx.Forward(r)
}

// Example runs the dedup processor with its store in the test driver.
func Example() {
	b := topology.NewBuilder()
	b.AddStore(statestore.Spec{Name: "seen", Kind: statestore.KindKeyValue, Logged: true})
	in := topology.NewStream(b, "events", serde.String(), serde.String())
	topology.Process(in,
		func() processor.Processor[string, string, string, string] { return &dedup{} },
		topology.WithStores("seen")).
		To("unique")
	topo, err := b.Build()
	if err != nil {
		log.Fatal(err)
	}

	d, err := topologytest.New(topo, topologytest.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	events := topologytest.Input(d, "events", serde.String(), serde.String())
	unique := topologytest.Output(d, "unique", serde.String(), serde.String())
	for i, id := range []string{"a", "b", "a", "c", "b"} {
		if err := events.Pipe(id, fmt.Sprint("event ", i), time.UnixMilli(int64(i))); err != nil {
			log.Fatal(err)
		}
	}
	got, err := unique.ReadKeyValues()
	if err != nil {
		log.Fatal(err)
	}
	for _, kv := range got {
		fmt.Println(kv.Key, kv.Value)
	}
	// Output:
	// a event 0
	// b event 1
	// c event 3
}
