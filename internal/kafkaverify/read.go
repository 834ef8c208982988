package kafkaverify

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/internal/kafka"
)

// ReadStable reads topic fully as a read_committed consumer sees it now,
// through a client of its own: every partition from its log start up to
// its last stable offset, without aborted records and control records, by
// partition, in offset order. It is the verifier's view of a topic.
func ReadStable(ctx context.Context, brokers []string, topic string) (map[int32][]kafka.Record, error) {
	cl, err := NewClient(brokers)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	return ReadCommitted(ctx, cl, topic)
}

// EndOffsets returns the end offset of every partition of topic: the high
// watermark, or with stable the last stable offset (below the first
// record of a transaction still open).
func EndOffsets(ctx context.Context, brokers []string, topic string, stable bool) (map[int32]int64, error) {
	cl, err := NewClient(brokers)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	tm, err := topicMetadata(ctx, cl, topic)
	if err != nil {
		return nil, err
	}
	isolation := int8(0)
	if stable {
		isolation = 1
	}
	return listOffsets(ctx, cl, topic, tm.Partitions, -1, isolation)
}

// NewClient returns a kgo client of brokers for a verifier's reads, with
// opts added (TLS, SASL); the caller closes it. It reloads metadata it
// found lacking (a topic created a moment ago elsewhere) after 50 ms, not
// kgo's default MetadataMinAge of 5 s.
func NewClient(brokers []string, opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ClientID("weir-kafkatest"),
		kgo.MetadataMinAge(50 * time.Millisecond),
	}, opts...)...)
}

func topicMetadata(ctx context.Context, cl *kgo.Client, topic string) (kmsg.MetadataResponseTopic, error) {
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	md.Topics = append(md.Topics, mt)
	mresp, err := md.RequestWith(ctx, cl)
	if err != nil {
		return kmsg.MetadataResponseTopic{}, fmt.Errorf("metadata: %w", err)
	}
	if len(mresp.Topics) != 1 {
		return kmsg.MetadataResponseTopic{}, fmt.Errorf("metadata: %d topics in answer", len(mresp.Topics))
	}
	tm := mresp.Topics[0]
	if err := kerr.ErrorForCode(tm.ErrorCode); err != nil {
		return tm, fmt.Errorf("metadata: %w", err)
	}
	return tm, nil
}

// ReadCommitted is ReadStable through cl.
//
// "Fully" is exact, not a quiet-period guess: each fetch response is
// decoded with kgo.ProcessFetchPartition, which also returns the offset to
// fetch next, so reading stops when that offset reaches the stable end even
// if the last offsets hold only transaction markers.
func ReadCommitted(ctx context.Context, cl *kgo.Client, topic string) (map[int32][]kafka.Record, error) {
	return ReadCommittedWithin(ctx, cl, topic, stableWait)
}

// ReadCommittedWithin is ReadCommitted waiting at most settle for the
// transactions open when it is called to end (stableEnd). A broker that
// writes a transaction's markers before it answers EndTxn (kfake) needs
// none: its last stable offset is exact at once, and a read with a
// transaction deliberately left open does not wait for it.
func ReadCommittedWithin(ctx context.Context, cl *kgo.Client, topic string, settle time.Duration) (map[int32][]kafka.Record, error) {
	tm, err := topicMetadata(ctx, cl, topic)
	if err != nil {
		return nil, err
	}
	start, err := listOffsets(ctx, cl, topic, tm.Partitions, -2, 1)
	if err != nil {
		return nil, err
	}
	end, err := stableEnd(ctx, cl, topic, tm.Partitions, settle)
	if err != nil {
		return nil, err
	}
	out := make(map[int32][]kafka.Record, len(tm.Partitions))
	for _, p := range tm.Partitions {
		recs, err := readPartition(ctx, cl, topic, tm.TopicID, p, start[p.Partition], end[p.Partition])
		if err != nil {
			return nil, err
		}
		out[p.Partition] = recs
	}
	return out, nil
}

// stableWait is how long ReadCommitted waits for transactions to settle.
const stableWait = 5 * time.Second

// stableEnd returns the last stable offset of every partition once it has
// reached the high watermark of the moment it was called, or after
// settle. A transaction whose EndTxn has returned is not readable at
// once: Kafka writes its markers afterwards, so a read right after an
// application's last commit would miss that commit's records. One still
// open after stableWait is left out, as by any read_committed consumer.
func stableEnd(ctx context.Context, cl *kgo.Client, topic string, parts []kmsg.MetadataResponseTopicPartition, settle time.Duration) (map[int32]int64, error) {
	high, err := listOffsets(ctx, cl, topic, parts, -1, 0)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(settle)
	for {
		stable, err := listOffsets(ctx, cl, topic, parts, -1, 1)
		if err != nil {
			return nil, err
		}
		settled := true
		for p, h := range high {
			settled = settled && stable[p] >= h
		}
		if settled || time.Now().After(deadline) {
			return stable, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// listOffsets returns, per partition, the offset for timestamp -2 (log
// start) or -1 (end), read_committed (isolation 1: the end is the last
// stable offset) or read_uncommitted (0: the high watermark).
func listOffsets(ctx context.Context, cl *kgo.Client, topic string, parts []kmsg.MetadataResponseTopicPartition, ts int64, isolation int8) (map[int32]int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	req.IsolationLevel = isolation
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for _, p := range parts {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = p.Partition
		rp.Timestamp = ts
		rp.CurrentLeaderEpoch = -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl) // kgo routes each partition to its leader
	if err != nil {
		return nil, fmt.Errorf("list offsets: %w", err)
	}
	out := make(map[int32]int64, len(parts))
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, fmt.Errorf("list offsets %s/%d: %w", topic, p.Partition, err)
			}
			out[p.Partition] = p.Offset
		}
	}
	if len(out) != len(parts) {
		return nil, fmt.Errorf("list offsets: %d of %d partitions answered", len(out), len(parts))
	}
	return out, nil
}

// readPartition fetches [from, end) of one partition from its leader.
func readPartition(ctx context.Context, cl *kgo.Client, topic string, topicID [16]byte, p kmsg.MetadataResponseTopicPartition, from, end int64) ([]kafka.Record, error) {
	var out []kafka.Record
	for offset := from; offset < end; {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = -1
		req.MaxWaitMillis = 100
		req.MinBytes = 1
		req.MaxBytes = 50 << 20
		req.IsolationLevel = 1
		req.SessionEpoch = -1 // no fetch session
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic, ft.TopicID = topic, topicID // by name before v13, by id after
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition = p.Partition
		fp.FetchOffset = offset
		fp.CurrentLeaderEpoch = -1
		fp.LogStartOffset = -1
		fp.PartitionMaxBytes = 10 << 20
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)

		kresp, err := cl.Broker(int(p.Leader)).Request(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("fetch %s/%d@%d: %w", topic, p.Partition, offset, err)
		}
		resp := kresp.(*kmsg.FetchResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return nil, fmt.Errorf("fetch %s/%d@%d: %w", topic, p.Partition, offset, err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return nil, fmt.Errorf("fetch %s/%d@%d: unexpected answer shape", topic, p.Partition, offset)
		}
		rp := &resp.Topics[0].Partitions[0]
		got, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
			Offset:         offset,
			IsolationLevel: kgo.ReadCommitted(),
			Topic:          topic,
			Partition:      p.Partition,
		}, rp, kgo.DefaultDecompressor(), nil)
		if got.Err != nil {
			return nil, fmt.Errorf("fetch %s/%d@%d: %w", topic, p.Partition, offset, got.Err)
		}
		for _, r := range got.Records {
			if r.Offset < end {
				out = append(out, FromKgo(r))
			}
		}
		if next > offset {
			offset = next
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("fetch %s/%d: stuck at %d of %d: %w", topic, p.Partition, offset, end, err)
		}
	}
	return out, nil
}

// FromKgo returns r as weir's record.
func FromKgo(r *kgo.Record) kafka.Record {
	out := kafka.Record{
		Topic:     r.Topic,
		Partition: r.Partition,
		Offset:    r.Offset,
		Key:       r.Key,
		Value:     r.Value,
		Timestamp: r.Timestamp,
	}
	for _, h := range r.Headers {
		out.Headers = append(out.Headers, kafka.Header{Key: h.Key, Value: h.Value})
	}
	return out
}
