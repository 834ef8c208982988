package kafka

import (
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"
)

// PartitionByKey as [Record].Partition asks the producer to choose the
// partition from the key the way Kafka's Java client does (see
// [PartitionForKey]); a record with a nil key then goes round robin.
const PartitionByKey int32 = -1

// Header is one record header. Keys need not be unique.
type Header struct {
	// Key of the header.
	Key string
	// Value of the header; nil is a null value.
	Value []byte
}

// Record is one Kafka record as weir sees it, consumed or to be produced.
//
// When producing, Offset is ignored, a zero Timestamp lets the producer
// stamp the record, and Partition selects the partition: a value >= 0 is
// used as is, [PartitionByKey] (any negative value) partitions by key. A nil
// Key is Kafka's null key, distinct from an empty one.
//
// A Record is a plain value; the byte slices are shared, not copied.
type Record struct {
	// Topic of the record.
	Topic string
	// Partition of the record; see above when producing.
	Partition int32
	// Offset of the record in its partition.
	Offset int64
	// Key; nil is a null key.
	Key []byte
	// Value; nil is a null value (a tombstone in a compacted topic).
	Value []byte
	// Headers in order.
	Headers []Header
	// Timestamp of the record (create or log-append time).
	Timestamp time.Time
}

// MaxMessageBytes is the producers' limit on one produce batch
// (sarama's Producer.MaxMessageBytes, set explicitly by every weir
// producer): 1 MiB, Kafka's max.request.size default.
const MaxMessageBytes = 1 << 20

// recordBatchOverhead is the size of a record batch's header (v2).
const recordBatchOverhead = 61

// MaxRecordBytes is the largest record, as [RecordSize] counts it, that
// weir writes: a batch holding it alone fits both [MaxMessageBytes] and
// the broker's default message.max.bytes (1,048,588).
const MaxRecordBytes = 1_048_588 - recordBatchOverhead

// RecordSize returns the bytes r takes in a record batch, counted the way
// sarama's producer counts them (varints at their maximal width).
func RecordSize(r Record) int {
	const maxVarint32, maxVarint64 = 5, 10
	size := 5*maxVarint32 + maxVarint64 + 1 + len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		size += len(h.Key) + len(h.Value) + 2*maxVarint32
	}
	return size
}

// CheckSize returns an error wrapping [ErrRecordTooLarge] if r is larger
// than [MaxRecordBytes].
func CheckSize(r Record) error {
	if n := RecordSize(r); n > MaxRecordBytes {
		return fmt.Errorf("%w: %d bytes to %q, the limit is %d", ErrRecordTooLarge, n, r.Topic, MaxRecordBytes)
	}
	return nil
}

// PartitionError is an error tied to one topic partition: a failed
// delivery, a failed fetch, a rejected offset commit. Err is the cause —
// for broker errors a sarama.KError, so that errors.Is(err, sarama.ErrX)
// classifies it.
type PartitionError struct {
	// Topic of the partition.
	Topic string
	// Partition number.
	Partition int32
	// Err is the cause.
	Err error
}

// Error implements error.
func (e *PartitionError) Error() string {
	return fmt.Sprintf("kafka: %s/%d: %v", e.Topic, e.Partition, e.Err)
}

// Unwrap returns the cause.
func (e *PartitionError) Unwrap() error { return e.Err }

// recordFromMessage converts a consumed sarama message.
func recordFromMessage(m *sarama.ConsumerMessage) Record {
	r := Record{
		Topic:     m.Topic,
		Partition: m.Partition,
		Offset:    m.Offset,
		Key:       m.Key,
		Value:     m.Value,
		Timestamp: m.Timestamp,
	}
	if len(m.Headers) > 0 {
		r.Headers = make([]Header, 0, len(m.Headers))
		for _, h := range m.Headers {
			if h == nil {
				continue
			}
			r.Headers = append(r.Headers, Header{Key: string(h.Key), Value: h.Value})
		}
	}
	return r
}

// MessageFromRecord builds the sarama message for a record to produce. The
// partition is left for [keyPartitioner] to read. The at-least-once
// [Producer] and the transactional producer (internal/txn) share it.
func MessageFromRecord(r Record) *sarama.ProducerMessage {
	o := &outMessage{msg: sarama.ProducerMessage{
		Topic:     r.Topic,
		Partition: r.Partition,
		Timestamp: r.Timestamp,
	}}
	m := &o.msg
	if m.Partition < 0 {
		m.Partition = PartitionByKey
	}
	if r.Key != nil {
		o.key = r.Key
		m.Key = &o.key
	}
	if r.Value != nil {
		o.value = r.Value
		m.Value = &o.value
	}
	if len(r.Headers) > 0 {
		m.Headers = make([]sarama.RecordHeader, len(r.Headers))
		for i, h := range r.Headers {
			m.Headers[i] = sarama.RecordHeader{Key: []byte(h.Key), Value: h.Value}
		}
	}
	return m
}

// outMessage is a sarama message allocated with its key and value
// encoders: a []byte converted to the Encoder interface is one more
// allocation each, and a pointer to a field of the same object is none
// (3 % of a stateless application's CPU went to the three allocations).
type outMessage struct {
	msg        sarama.ProducerMessage
	key, value sarama.ByteEncoder
}

// wrapConsumerError turns an error from sarama's consumer group into a weir
// error: per-partition errors become *PartitionError, the rest are prefixed.
func wrapConsumerError(groupID string, err error) error {
	var ce *sarama.ConsumerError
	if errors.As(err, &ce) {
		if errors.Is(ce.Err, sarama.ErrTopicAuthorizationFailed) {
			return &PartitionError{Topic: ce.Topic, Partition: ce.Partition,
				Err: fmt.Errorf("%w (an ACL granting Read on topic %q is needed)", ce.Err, ce.Topic)}
		}
		return &PartitionError{Topic: ce.Topic, Partition: ce.Partition, Err: ce.Err}
	}
	if errors.Is(err, sarama.ErrGroupAuthorizationFailed) {
		return fmt.Errorf("kafka: group %q: %w (an ACL granting Read on group %q is needed)", groupID, err, groupID)
	}
	return fmt.Errorf("kafka: group %q: %w", groupID, err)
}
