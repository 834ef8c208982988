package topology

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/processor"
)

// TimestampExtractor gives each record of a source its timestamp, like
// Kafka Streams' TimestampExtractor given with Consumed.withTimestampExtractor.
// It sees the decoded key and value (a null key or value as the zero value,
// as every DSL function does), the timestamp the record carries, and the
// partition time: the largest timestamp the extractor returned so far for
// the source's topic in the task, or the zero time before the first (Kafka
// Streams' -1). The partition time starts again from the zero time when a
// task starts.
//
// What it returns is the record's timestamp for everything downstream:
// windows, grace and lateness, joins, stream time, punctuation, and the
// timestamps of the outputs it causes. Its fates:
//
//   - a valid time (not the zero time, not before the Unix epoch) stamps
//     the record;
//   - an invalid time drops the record, counted in
//     processor.MetricDroppedInvalidTimestamp, as Kafka Streams skips a
//     record whose extracted timestamp is negative;
//   - an error (or a panic) is a processor.DeserializationError for the
//     record, handled by the bad-record policy like an undecodable record
//     (Kafka Streams stops the application instead).
//
// The function may be called concurrently by the tasks of different
// partitions. weir's core reads no clock, so it offers no counterpart of
// WallclockTimestampExtractor: an extractor that returns time.Now() works,
// at the cost of outputs that differ from one run to the next.
type TimestampExtractor[K, V any] func(key K, value V, recordTime, partitionTime time.Time) (time.Time, error)

// WithTimestamp sets the timestamp extractor of the source NewStream or
// NewTable reads; other operations ignore it. K and V must be the source's
// key and value types; Build reports a mismatch. Without an extractor a
// source keeps each record's own timestamp and an invalid one is a
// DeserializationError (Kafka Streams' default, FailOnInvalidTimestamp,
// stops the application).
func WithTimestamp[K, V any](fn TimestampExtractor[K, V]) Option {
	return func(c *config) { c.timestamp = fn }
}

// LogAndSkipOnInvalidTimestamp keeps each record's own timestamp and drops
// (counts in processor.MetricDroppedInvalidTimestamp) a record whose
// timestamp is invalid, like Kafka Streams' LogAndSkipOnInvalidTimestamp.
// For NewStream and NewTable.
func LogAndSkipOnInvalidTimestamp() Option {
	return func(c *config) { c.timestamp = processor.TimestampFunc(recordTimeOrSkip) }
}

// UsePartitionTimeOnInvalidTimestamp keeps each record's own timestamp and
// gives a record whose timestamp is invalid the partition time (see
// TimestampExtractor), like Kafka Streams' UsePartitionTimeOnInvalidTimestamp.
// Before the partition has a time, an invalid timestamp is a
// DeserializationError wrapping ErrNoPartitionTime (Kafka Streams stops the
// application). For NewStream and NewTable.
func UsePartitionTimeOnInvalidTimestamp() Option {
	return func(c *config) { c.timestamp = processor.TimestampFunc(recordTimeOrPartitionTime) }
}

func recordTimeOrSkip(_, _ any, recordTime, _ time.Time) (time.Time, error) {
	return recordTime, nil // an invalid time drops the record
}

func recordTimeOrPartitionTime(_, _ any, recordTime, partitionTime time.Time) (time.Time, error) {
	if processor.ValidTimestamp(recordTime) {
		return recordTime, nil
	}
	if partitionTime.IsZero() {
		return time.Time{}, fmt.Errorf("%w (record time %v)", ErrNoPartitionTime, recordTime)
	}
	return partitionTime, nil
}

// sourceTimestamp returns the processor form of the extractor cfg holds for
// a source of K and V, or nil for none; a WithTimestamp for other types is
// a build error naming op.
func sourceTimestamp[K, V any](b *Builder, cfg config, op string) processor.TimestampFunc {
	switch fn := cfg.timestamp.(type) {
	case nil:
		return nil
	case processor.TimestampFunc:
		return fn
	case TimestampExtractor[K, V]:
		if fn == nil {
			b.failf("%s: WithTimestamp(nil)", op)
			return nil
		}
		return func(k, v any, recordTime, partitionTime time.Time) (time.Time, error) {
			tk, err := processor.As[K](k)
			if err != nil {
				return time.Time{}, err
			}
			tv, err := processor.As[V](v)
			if err != nil {
				return time.Time{}, err
			}
			return fn(tk, tv, recordTime, partitionTime)
		}
	default:
		b.failf("%s: WithTimestamp's extractor is a %T; the source's records are %s and %s", op, fn, typeName[K](), typeName[V]())
		return nil
	}
}
