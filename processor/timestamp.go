package processor

import (
	"fmt"
	"time"
)

// TimestampFunc gives a source's record its timestamp, as Kafka Streams'
// TimestampExtractor does. It sees the decoded key and value (nil for a null
// key or value), the timestamp the record carries, and the partition time:
// the largest timestamp this function returned so far for the record's
// topic in the task, or the zero time before the first.
//
// A time before the Unix epoch (or the zero time) is invalid: the task drops
// the record and counts it in MetricDroppedInvalidTimestamp, as Kafka
// Streams skips a record whose extracted timestamp is negative. An error is
// a DeserializationError for the record, handled by the error policy.
type TimestampFunc func(key, value any, recordTime, partitionTime time.Time) (time.Time, error)

// MetricDroppedInvalidTimestamp counts the input records dropped because a
// source's TimestampFunc returned an invalid time.
const MetricDroppedInvalidTimestamp = "dropped-records-invalid-timestamp"

// ValidTimestamp reports whether t can stamp a record: not the zero time and
// not before the Unix epoch (Kafka timestamps are non-negative milliseconds).
func ValidTimestamp(t time.Time) bool {
	return !t.IsZero() && t.UnixMilli() >= 0
}

// extractTimestamp runs src's TimestampFunc for the decoded record r and
// returns its timestamp in ms, or ok false when the record is to be
// dropped (counted). A user function's panic becomes an error.
func (t *Task) extractTimestamp(src *node, r RawRecord, k, v any) (ts int64, ok bool, err error) {
	var pt time.Time
	if last, seen := t.partitionTime[r.Topic]; seen {
		pt = time.UnixMilli(last)
	}
	var got time.Time
	err = t.guard(func() error {
		var err error
		got, err = src.def.Timestamp(k, v, r.Timestamp, pt)
		return err
	})
	if err != nil {
		return 0, false, fmt.Errorf("timestamp extractor: %w", err)
	}
	if !ValidTimestamp(got) {
		t.counters[MetricDroppedInvalidTimestamp]++
		return 0, false, nil
	}
	ts = got.UnixMilli()
	if last, seen := t.partitionTime[r.Topic]; !seen || ts > last {
		t.partitionTime[r.Topic] = ts
	}
	return ts, true, nil
}
