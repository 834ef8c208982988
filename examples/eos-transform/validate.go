package main

import (
	"fmt"
	"math"

	"github.com/weirstream/weir/processor"
)

// processorOf is the processor type of the transform.
type processorOf = processor.Processor[string, Order, string, map[string]any]

// validate turns a JSON order into the Avro record, or fails it: an error
// here is a processing error, which the DeadLetter policy routes to the
// dead-letter topic with the record's position and the error.
type validate struct{}

func (validate) Process(ctx processor.Context[string, map[string]any], r processor.Record[string, Order]) error {
	o := r.Value
	switch {
	case o.ID == "":
		return fmt.Errorf("%w: no id", errInvalidOrder)
	case o.Amount <= 0 || math.IsInf(o.Amount, 0) || math.IsNaN(o.Amount):
		return fmt.Errorf("%w: amount %v", errInvalidOrder, o.Amount)
	case len(o.Currency) != 3:
		return fmt.Errorf("%w: currency %q", errInvalidOrder, o.Currency)
	}
	return ctx.Forward(processor.Record[string, map[string]any]{
		Key: o.ID,
		Value: map[string]any{
			"id": o.ID, "customer": o.Customer,
			"amount_cents": int64(math.Round(o.Amount * 100)), "currency": o.Currency,
		},
		Timestamp: r.Timestamp, Headers: r.Headers,
	})
}
