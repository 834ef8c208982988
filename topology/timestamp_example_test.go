package topology_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
	"github.com/weirstream/weir/topologytest"
)

// Orders stamped with the time they were placed, which their JSON carries,
// instead of the time they were written to Kafka: the windows follow it.
func ExampleWithTimestamp() {
	type order struct {
		ID       string    `json:"id"`
		PlacedAt time.Time `json:"placed_at"`
	}
	placedAt := func(_ string, o order, _, _ time.Time) (time.Time, error) {
		return o.PlacedAt, nil // the zero time (no placed_at) drops the order, counted
	}
	b := topology.NewBuilder()
	orders := topology.NewStream(b, "orders", serde.String(), serde.JSON[order](), topology.WithTimestamp(placedAt))
	topology.WindowedBy(orders.GroupByKey(), topology.TumblingWindows(time.Hour)).Count().ToStream().
		Peek(func(w topology.Windowed[string], n int64) {
			fmt.Println(w.Key, w.Start.UTC().Format("15:04"), n)
		}).To("orders-per-hour")
	topo, _ := b.Build()

	d, _ := topologytest.New(topo, topologytest.Config{})
	defer d.Close()
	written := time.Date(2026, 1, 1, 18, 0, 0, 0, time.UTC)
	for _, placed := range []string{"2026-01-01T09:15:00Z", "2026-01-01T09:50:00Z", "2026-01-01T11:05:00Z"} {
		at, _ := time.Parse(time.RFC3339, placed)
		v, _ := json.Marshal(order{ID: placed, PlacedAt: at})
		_ = d.PipeRaw("orders", []byte("shop-1"), v, written)
	}
	_ = d.PipeRaw("orders", []byte("shop-1"), []byte(`{"id":"no-time"}`), written)
	fmt.Println("dropped:", d.Counters()[processor.MetricDroppedInvalidTimestamp])
	// Output:
	// shop-1 09:00 1
	// shop-1 09:00 2
	// shop-1 11:00 1
	// dropped: 1
}

// A trace id read from a header into the value, and a header added.
func ExampleMapValuesWithHeaders() {
	b := topology.NewBuilder()
	in := topology.NewStream(b, "in", serde.String(), serde.String())
	topology.MapValuesWithHeaders(in, func(_, v string, h *topology.Headers) string {
		trace, _ := h.Get("trace-id")
		h.Set("handled-by", []byte("weir"))
		return fmt.Sprintf("%s (trace %s)", v, trace)
	}).To("out")
	topo, _ := b.Build()

	d, _ := topologytest.New(topo, topologytest.Config{})
	defer d.Close()
	_ = d.PipeRaw("in", []byte("k"), []byte("hello"), time.UnixMilli(1), processor.Header{Key: "trace-id", Value: []byte("abc")})
	for _, o := range d.Topic("out") {
		fmt.Println(string(o.Value))
		for _, h := range o.Headers {
			fmt.Printf("%s=%s\n", h.Key, h.Value)
		}
	}
	// Output:
	// hello (trace abc)
	// trace-id=abc
	// handled-by=weir
}
