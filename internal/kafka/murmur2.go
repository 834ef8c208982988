package kafka

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"

	"github.com/IBM/sarama"
)

// Murmur2 is Kafka's murmur2 hash, bit for bit the Java client's
// org.apache.kafka.common.utils.Utils.murmur2 (MurmurHash2, seed
// 0x9747b28c, little-endian words), returned as Java's signed int.
func Murmur2(data []byte) int32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	h := seed ^ uint32(len(data))
	b := data
	for len(b) >= 4 {
		k := binary.LittleEndian.Uint32(b)
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
		b = b[4:]
	}
	// Java's switch falls through from the highest remaining byte down.
	switch len(b) {
	case 3:
		h ^= uint32(b[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(b[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(b[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// toPositive is Java's Utils.toPositive: the sign bit cleared (not the
// absolute value, which differs for negative numbers and overflows for
// MinInt32).
func toPositive(n int32) int32 { return n & 0x7fffffff }

// PartitionForKey returns the partition the Java client's default
// partitioner picks for a non-null key: toPositive(murmur2(key)) mod
// numPartitions. Records keyed the same way by a Java (or Kafka Streams)
// producer and by weir land on the same partition, which co-partitioning
// across systems depends on. It returns an error if numPartitions < 1.
func PartitionForKey(key []byte, numPartitions int32) (int32, error) {
	if numPartitions < 1 {
		return 0, fmt.Errorf("kafka: partition for key: %d partitions", numPartitions)
	}
	return toPositive(Murmur2(key)) % numPartitions, nil
}

// keyPartitioner is the producer's sarama.Partitioner: an explicit
// partition (>= 0) is used as is, a non-nil key is hashed with
// [PartitionForKey], a nil key goes round robin over writable partitions.
type keyPartitioner struct {
	next atomic.Uint32
}

var (
	_ sarama.Partitioner                   = (*keyPartitioner)(nil)
	_ sarama.DynamicConsistencyPartitioner = (*keyPartitioner)(nil)
)

// NewKeyPartitioner is the sarama.PartitionerConstructor of weir's
// producers — this package's at-least-once one and the transactional one
// in internal/txn — so both partition records the same way.
func NewKeyPartitioner(string) sarama.Partitioner { return &keyPartitioner{} }

// Partition implements sarama.Partitioner. numPartitions counts all
// partitions when MessageRequiresConsistency is true, only the writable
// ones otherwise; sarama maps the returned index to a partition id.
func (p *keyPartitioner) Partition(msg *sarama.ProducerMessage, numPartitions int32) (int32, error) {
	if msg.Partition >= 0 {
		if msg.Partition >= numPartitions {
			return 0, fmt.Errorf("%w %d: topic %q has %d partitions: %w",
				ErrInvalidPartition, msg.Partition, msg.Topic, numPartitions, sarama.ErrInvalidPartition)
		}
		return msg.Partition, nil
	}
	if msg.Key == nil {
		return int32((p.next.Add(1) - 1) % uint32(numPartitions)), nil
	}
	key, err := msg.Key.Encode()
	if err != nil {
		return 0, fmt.Errorf("kafka: encode key: %w", err)
	}
	return PartitionForKey(key, numPartitions)
}

// RequiresConsistency implements sarama.Partitioner.
func (p *keyPartitioner) RequiresConsistency() bool { return true }

// MessageRequiresConsistency implements sarama.DynamicConsistencyPartitioner:
// only null-key records may go to whichever partition is writable.
func (p *keyPartitioner) MessageRequiresConsistency(msg *sarama.ProducerMessage) bool {
	return msg.Partition >= 0 || msg.Key != nil
}
