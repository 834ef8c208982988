package main

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/examples/orders/pipeline"
)

// input is one record of the demo input.
type input struct {
	topic string
	key   string
	value *string // nil: a tombstone
	at    time.Time
}

// day is the demo's day; its inputs and hours print as times of it (UTC).
var day = time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)

func customer(id, value, at string) input { return record(pipeline.Customers, id, &value, at) }
func order(id, value, at string) input    { return record(pipeline.Orders, id, &value, at) }
func cancelOrder(id, at string) input     { return record(pipeline.Orders, id, nil, at) }

func record(topic, key string, value *string, at string) input {
	d, err := time.Parse("15:04", at)
	if err != nil {
		panic(err) // the demo input is constant
	}
	return input{topic: topic, key: key, value: value, at: day.Add(time.Duration(d.Hour())*time.Hour + time.Duration(d.Minute())*time.Minute)}
}

// demoInput is the README's input, also the conformance script
// internal/conformance/scripts/port-orders/readme.json (main_test.go checks both).
var demoInput = []input{
	customer("c1", "Ann,EU", "08:00"),
	customer("c2", "Bob,US", "08:00"),
	customer("c3", "Cy,EU", "08:00"),
	order("o1", "c1,100", "09:05"),
	order("o2", "c2,250", "09:20"),
	order("o3", "c3,40", "09:40"),
	order("o2", "c2,200", "09:50"), // changed
	order("o4", "c1,60", "10:05"),
	cancelOrder("o3", "10:08"),
	order("o5", "c2,30", "10:15"),     // stream time passes 10:10: 09:00's final counts
	customer("c1", "Ann,US", "10:30"), // moves: o1 and o4 with her
	order("o6", "c3,5", "09:55"),      // late for 09:00, beyond the grace
	order("o7", "c2,10", "11:20"),     // 10:00's final counts
}

// String prints the record as the demo's transcript shows it.
func (in input) String() string {
	return fmt.Sprintf("%s  %-9s  %s  %s", in.at.Format("15:04"), in.topic, in.key, text(in.value))
}

// output is one output record as the transcript shows it.
type output struct {
	topic string
	key   string
	value *string
}

func (o output) String() string {
	return fmt.Sprintf("         -> %-17s  %s  %s", o.topic, o.key, text(o.value))
}

func text(v *string) string {
	if v == nil {
		return "(tombstone)"
	}
	return *v
}
