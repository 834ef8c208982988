// Package processor is weir's Processor API and the pure per-partition task
// step that runs a topology.
//
// A Processor receives typed records and forwards typed records to its
// children through a Context. It may use state stores and schedule
// punctuators on stream time or wall-clock time:
//
//	type dedup struct{ seen *statestore.KV[string, int64] }
//
//	func (d *dedup) Init(ctx processor.Context[string, string]) error {
//		st, err := processor.KeyValueStore(ctx, "seen", serde.String(), serde.Int64())
//		d.seen = st
//		return err
//	}
//
//	func (d *dedup) Process(ctx processor.Context[string, string], r processor.Record[string, string]) error {
//		if _, ok, err := d.seen.Get(r.Key); err != nil || ok {
//			return err
//		}
//		if err := d.seen.Put(r.Key, r.Timestamp.UnixMilli()); err != nil {
//			return err
//		}
//		return ctx.Forward(r)
//	}
//
// Package topology builds processors into a Graph; NewTask instantiates the
// graph for one partition. A Task is deterministic: feeding it the same
// records in the same order yields the same outputs, store writes and
// punctuations. It performs no I/O and never reads the wall clock — the
// engines (continuous, microbatch) and the test driver (topologytest) feed it
// records, collect its outputs and tell it the time. That is what makes
// replay exact and the test driver honest.
//
// # Records without a value
//
// Inside a task, keys and values travel as any. A Kafka record with a null
// value (a tombstone) or a null key keeps nil there: typed user functions see
// the zero value of their type, aggregations drop such records (and count
// them), tables treat a nil value as a delete, and a sink writes nil as null.
package processor
