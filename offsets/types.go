package offsets

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// TopicPartition names one partition of a Kafka topic.
type TopicPartition struct {
	// Topic is the topic's name; it is never empty in a valid record.
	Topic string
	// Partition is the partition number, zero or more.
	Partition int32
}

// String returns "topic-partition", as Kafka prints a partition.
func (tp TopicPartition) String() string {
	return tp.Topic + "-" + strconv.FormatInt(int64(tp.Partition), 10)
}

// Compare orders partitions by topic, then by partition number. It returns
// -1, 0 or +1, so it can be passed to slices.SortFunc through a closure:
//
//	slices.SortFunc(ranges, func(a, b offsets.Range) int {
//		return a.Compare(b.TopicPartition)
//	})
func (tp TopicPartition) Compare(other TopicPartition) int {
	if c := cmp.Compare(tp.Topic, other.Topic); c != 0 {
		return c
	}
	return cmp.Compare(tp.Partition, other.Partition)
}

func (tp TopicPartition) validate() error {
	if tp.Topic == "" {
		return fmt.Errorf("empty topic name")
	}
	if tp.Partition < 0 {
		return fmt.Errorf("%s: negative partition", tp)
	}
	return nil
}

// Range is the half-open offset range [Start, End) of one partition.
type Range struct {
	TopicPartition
	// Start is the first offset in the range: the partition's committed
	// offset when the batch was planned.
	Start int64
	// End is one past the last offset in the range; End == Start is an
	// empty range.
	End int64
}

// Len returns the number of offsets in the range, End - Start. Under
// read_committed, transaction markers and aborted records take offsets
// too, so a batch may hold fewer records than its ranges' lengths.
func (r Range) Len() int64 { return r.End - r.Start }

// String returns "topic-partition[start,end)".
func (r Range) String() string {
	return fmt.Sprintf("%s[%d,%d)", r.TopicPartition, r.Start, r.End)
}

func (r Range) validate() error {
	if err := r.TopicPartition.validate(); err != nil {
		return err
	}
	if r.Start < 0 {
		return fmt.Errorf("%s: negative start offset", r)
	}
	if r.End < r.Start {
		return fmt.Errorf("%s: range ends before it starts", r)
	}
	return nil
}

// PartitionOffset is the next offset to read from a partition: everything
// before Next has been processed and committed.
type PartitionOffset struct {
	TopicPartition
	// Next is the offset of the next record to process, zero or more.
	Next int64
}

// String returns "topic-partition@next".
func (po PartitionOffset) String() string {
	return fmt.Sprintf("%s@%d", po.TopicPartition, po.Next)
}

func (po PartitionOffset) validate() error {
	if err := po.TopicPartition.validate(); err != nil {
		return err
	}
	if po.Next < 0 {
		return fmt.Errorf("%s: negative offset", po)
	}
	return nil
}

// Plan is the planned input of one micro-batch: what the write-ahead log
// stores under offsets/<Batch> before the batch runs. Replaying a batch
// means running exactly these ranges again with this batch time and
// watermark, so its output is the same.
//
// Times are stored with millisecond precision: Marshal truncates them,
// Unmarshal returns them in UTC, and the zero Time round-trips as the zero
// Time. A Plan is a plain value; it is safe for concurrent reads.
type Plan struct {
	// Batch is the batch number, zero or more; batch N+1 follows batch N.
	Batch int64
	// Ranges holds one range per input partition, sorted by topic and
	// partition with no partition twice (see TopicPartition.Compare).
	Ranges []Range
	// Timestamp is the batch time: the processing time the batch runs at,
	// the same on every replay.
	Timestamp time.Time
	// Watermark is the event-time watermark the batch runs with.
	Watermark time.Time
	// Trigger names the trigger that planned the batch, for inspection,
	// e.g. "ProcessingTime(5s)" or "AvailableNow".
	Trigger string
}

// Validate reports whether p can be stored: Batch is not negative, and the
// ranges are valid ([Start, End) with 0 ≤ Start ≤ End, non-empty topic,
// partition ≥ 0) and sorted by topic and partition without duplicates. The
// error wraps ErrInvalid.
func (p Plan) Validate() error {
	if err := p.validate(); err != nil {
		return fmt.Errorf("%w: plan: %w", ErrInvalid, err)
	}
	return nil
}

func (p Plan) validate() error {
	if p.Batch < 0 {
		return fmt.Errorf("negative batch %d", p.Batch)
	}
	for i, r := range p.Ranges {
		if err := r.validate(); err != nil {
			return err
		}
		if i > 0 && p.Ranges[i-1].Compare(r.TopicPartition) >= 0 {
			return fmt.Errorf("ranges not sorted or duplicated at %s", r.TopicPartition)
		}
	}
	return nil
}

// Records returns the sum of the ranges' lengths: the number of offsets the
// batch covers.
func (p Plan) Records() int64 {
	var n int64
	for _, r := range p.Ranges {
		n += r.Len()
	}
	return n
}

// Range returns the plan's range for a partition, and whether the plan has
// one. The ranges must be sorted, as Validate requires.
func (p Plan) Range(tp TopicPartition) (Range, bool) {
	i, ok := slices.BinarySearchFunc(p.Ranges, tp, func(r Range, tp TopicPartition) int {
		return r.Compare(tp)
	})
	if !ok {
		return Range{}, false
	}
	return p.Ranges[i], true
}

// Commit records that a micro-batch is done: its output and its offsets are
// committed. The log stores it under commits/<Batch>.
type Commit struct {
	// Batch is the batch number; a plan for it must be in the log.
	Batch int64
	// Timestamp is when the batch finished (millisecond precision).
	Timestamp time.Time
}

// Validate reports whether c can be stored: Batch is not negative. The
// error wraps ErrInvalid.
func (c Commit) Validate() error {
	if err := c.validate(); err != nil {
		return fmt.Errorf("%w: commit: %w", ErrInvalid, err)
	}
	return nil
}

func (c Commit) validate() error {
	if c.Batch < 0 {
		return fmt.Errorf("negative batch %d", c.Batch)
	}
	return nil
}

// Epoch is one entry of the continuous-mode epoch log, appended after the
// epoch's Kafka commit succeeded ("write-after log"): the offsets at the
// epoch marker, per partition.
type Epoch struct {
	// Epoch is the epoch number, zero or more; each appended epoch is
	// greater than the one before.
	Epoch int64
	// Offsets holds the next offset of each partition at the epoch marker,
	// sorted by topic and partition with no partition twice.
	Offsets []PartitionOffset
	// Timestamp is when the epoch committed (millisecond precision).
	Timestamp time.Time
}

// Validate reports whether e can be stored: Epoch and every offset are not
// negative, topics are named, and offsets are sorted by topic and partition
// without duplicates. The error wraps ErrInvalid.
func (e Epoch) Validate() error {
	if err := e.validate(); err != nil {
		return fmt.Errorf("%w: epoch: %w", ErrInvalid, err)
	}
	return nil
}

func (e Epoch) validate() error {
	if e.Epoch < 0 {
		return fmt.Errorf("negative epoch %d", e.Epoch)
	}
	for i, po := range e.Offsets {
		if err := po.validate(); err != nil {
			return err
		}
		if i > 0 && e.Offsets[i-1].Compare(po.TopicPartition) >= 0 {
			return fmt.Errorf("offsets not sorted or duplicated at %s", po.TopicPartition)
		}
	}
	return nil
}

// Offset returns the epoch's next offset for a partition, and whether the
// epoch has one.
func (e Epoch) Offset(tp TopicPartition) (int64, bool) {
	i, ok := slices.BinarySearchFunc(e.Offsets, tp, func(po PartitionOffset, tp TopicPartition) int {
		return po.Compare(tp)
	})
	if !ok {
		return 0, false
	}
	return e.Offsets[i].Next, true
}
