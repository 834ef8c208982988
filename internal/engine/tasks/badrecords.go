package tasks

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/processor"
)

// BadRecordPolicy says what happens to an input record that cannot be
// deserialized or processed.
type BadRecordPolicy int

const (
	// Fail stops the application with an error naming the record's topic,
	// partition and offset. Records before it are committed.
	Fail BadRecordPolicy = iota
	// Skip logs the record's position and the error, counts it, and goes on.
	Skip
	// DeadLetter writes the raw record to "<topic>-dlq" with headers naming
	// the error and the record's position, and goes on.
	DeadLetter
)

// String names the policy.
func (p BadRecordPolicy) String() string {
	switch p {
	case Fail:
		return "fail"
	case Skip:
		return "skip"
	case DeadLetter:
		return "dead-letter"
	}
	return fmt.Sprintf("BadRecordPolicy(%d)", int(p))
}

func (p BadRecordPolicy) validate() error {
	if p < Fail || p > DeadLetter {
		return fmt.Errorf("runtime: unknown bad-record policy %d", int(p))
	}
	return nil
}

// Headers of a dead-letter record.
const (
	HeaderErrorKind      = "weir.error.kind"
	HeaderErrorMessage   = "weir.error.message"
	HeaderErrorNode      = "weir.error.node"
	HeaderSourceTopic    = "weir.source.topic"
	HeaderSourcePartiton = "weir.source.partition"
	HeaderSourceOffset   = "weir.source.offset"
)

// DeadLetterTopic returns the dead-letter topic of a source topic.
func DeadLetterTopic(topic string) string { return topic + "-dlq" }

// handleBadRecord applies the policy to a record the task could not handle.
// It returns nil when the record was skipped or dead-lettered, and the
// error when the application must stop.
func (r *Runtime) handleBadRecord(ctx context.Context, rec kafka.Record, err error) error {
	var re *processor.RecordError
	if !errors.As(err, &re) || isStagingFull(err) || errors.Is(err, ErrRewind) || errors.Is(err, errNotSent) || errors.Is(err, processor.ErrStop) {
		return err // not about the record: a store, sink, producer or transaction failure
	}
	switch r.cfg.BadRecords {
	case Skip:
		r.stats.Skipped.Add(1)
		r.log.Warn("weir: skipping bad record", "topic", rec.Topic, "partition", rec.Partition,
			"offset", rec.Offset, "kind", re.Kind.String(), "node", re.Node, "err", re.Err)
		return nil
	case DeadLetter:
		dlq := deadLetter(rec, re)
		if err := r.committer.Send(ctx, dlq); err != nil {
			return fmt.Errorf("runtime: dead-letter %s/%d@%d: %w", rec.Topic, rec.Partition, rec.Offset, err)
		}
		r.stats.DeadLetter.Add(1)
		return nil
	default:
		return err
	}
}

// deadLetter returns the dead-letter record of rec, which failed with re.
func deadLetter(rec kafka.Record, re *processor.RecordError) kafka.Record {
	headers := append(append([]kafka.Header(nil), rec.Headers...),
		kafka.Header{Key: HeaderErrorKind, Value: []byte(re.Kind.String())},
		kafka.Header{Key: HeaderErrorMessage, Value: []byte(re.Err.Error())},
		kafka.Header{Key: HeaderErrorNode, Value: []byte(re.Node)},
		kafka.Header{Key: HeaderSourceTopic, Value: []byte(rec.Topic)},
		kafka.Header{Key: HeaderSourcePartiton, Value: []byte(strconv.Itoa(int(rec.Partition)))},
		kafka.Header{Key: HeaderSourceOffset, Value: []byte(strconv.FormatInt(rec.Offset, 10))},
	)
	return kafka.Record{
		Topic: DeadLetterTopic(rec.Topic), Partition: rec.Partition,
		Key: rec.Key, Value: rec.Value, Headers: headers, Timestamp: rec.Timestamp,
	}
}
