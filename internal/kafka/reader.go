package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"
)

// ReadRange reads the records of one partition with offsets in [from, to),
// in order, calling fn for each, outside any consumer group. It is how state
// is restored from a changelog topic.
//
// Under readCommitted, records of aborted transactions and the control
// records that end transactions are never delivered, so the last offsets
// below to may never arrive: ReadRange then stops when the partition's
// high watermark is at or past to and no record came for idle. Without
// readCommitted every offset in the range holds a record (compaction aside,
// handled the same way).
func (a *Admin) ReadRange(ctx context.Context, topic string, partition int32, from, to int64, readCommitted bool, fn func(Record) error) error {
	if from >= to {
		return nil
	}
	sc, err := a.cfg.saramaConfig()
	if err != nil {
		return err
	}
	if readCommitted {
		sc.Consumer.IsolationLevel = sarama.ReadCommitted
	}
	sc.Consumer.Return.Errors = true
	consumer, err := sarama.NewConsumer(a.cfg.Brokers, sc)
	if err != nil {
		return fmt.Errorf("kafka: read %s/%d: %w", topic, partition, err)
	}
	defer consumer.Close()
	pc, err := consumer.ConsumePartition(topic, partition, from)
	if err != nil {
		return fmt.Errorf("kafka: read %s/%d from %d: %w", topic, partition, from, err)
	}
	defer pc.Close()
	const idle = 500 * time.Millisecond
	timer := time.NewTimer(idle)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("kafka: read %s/%d: %w", topic, partition, ctx.Err())
		case m := <-pc.Messages():
			if m == nil {
				return fmt.Errorf("kafka: read %s/%d: consumer closed", topic, partition)
			}
			if m.Offset >= to {
				return nil
			}
			if err := fn(recordFromMessage(m)); err != nil {
				return err
			}
			if m.Offset+1 >= to {
				return nil
			}
			timer.Reset(idle)
		case cerr := <-pc.Errors():
			if cerr == nil {
				return fmt.Errorf("kafka: read %s/%d: consumer closed", topic, partition)
			}
			if errors.Is(cerr.Err, sarama.ErrOffsetOutOfRange) {
				return &PartitionError{Topic: topic, Partition: partition, Err: cerr.Err}
			}
			a.cfg.logger().Warn("kafka: read error, retrying", "topic", topic, "partition", partition, "err", cerr.Err)
		case <-timer.C:
			if pc.HighWaterMarkOffset() >= to {
				return nil
			}
			timer.Reset(idle)
		}
	}
}
