package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The franz-go path of [Admin.ReadRange]: the same exact read, with the
// Fetch requests sent by a kgo client (its version negotiation, Fetch
// v13+ naming the topic by id on brokers that serve it) and the responses
// decoded by kgo.ProcessFetchPartition, which drops control batches and,
// under read_committed, the batches of aborted transactions the way Kafka's
// Java consumer does, and returns the offset after the last batch it
// processed — past control markers, aborted data and batches compaction
// emptied — which is where the next fetch starts. The contract (errors,
// retries, the log start moving, fetch sizing) and the loop
// (rangeReader.run) are rangeReader's.

// franzReader returns the Admin's kgo client for ReadRange, connecting it
// on first use; Close closes it.
func (a *Admin) franzReader() (*kgo.Client, error) {
	a.franzMu.Lock()
	defer a.franzMu.Unlock()
	if a.franz != nil {
		return a.franz, nil
	}
	opts, err := FranzOpts(a.cfg)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka: read: new client: %w", err)
	}
	a.franz = cl
	return cl, nil
}

// readRangeFranz is ReadRange on franz-go.
func (a *Admin) readRangeFranz(ctx context.Context, topic string, partition int32, from, to int64, readCommitted bool, fn func(Record) error) error {
	r := &franzRangeReader{rangeReader: rangeReader{
		a: a, topic: topic, partition: partition, to: to,
		readCommitted: readCommitted, fn: fn,
		next: from, fetchSize: readFetchBytes,
	}}
	if n := a.cfg.Tuning.MaxPartitionFetchBytes; n > 0 {
		r.fetchSize = n
	}
	if a.client.Closed() {
		return r.errorf("%w", ErrClosed)
	}
	cl, err := a.franzReader()
	if err != nil {
		return err
	}
	r.cl = cl
	r.isolation = kgo.ReadUncommitted()
	if readCommitted {
		r.isolation = kgo.ReadCommitted()
	}
	r.decompressor = kgo.DefaultDecompressor()
	return r.run(ctx, r, r.fetchSize)
}

// franzRangeReader is the state of one ReadRange call on franz-go; the
// embedded rangeReader holds the range and sizes the fetches.
type franzRangeReader struct {
	rangeReader
	cl           *kgo.Client
	isolation    kgo.IsolationLevel
	decompressor kgo.Decompressor

	// The partition's leader, its epoch and the topic's id, from the last
	// metadata answer; known is false until there is one, and after a
	// fetch error that a newer answer may cure.
	known  bool
	leader int32
	epoch  int32
	id     [16]byte
}

// fetch implements rangeClient: a metadata lookup if the leader is not
// known, then one Fetch.
func (r *franzRangeReader) fetch(ctx context.Context) (*rangeAnswer, error) {
	err := r.lookup(ctx)
	var rp *kmsg.FetchResponseTopicPartition
	if err == nil {
		rp, err = r.fetchPartition(ctx)
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, &readStopped{r.errorf("%w (%w)", ctx.Err(), err)}
	case err != nil || rp == nil:
		return nil, err
	}
	return &rangeAnswer{
		hwm: rp.HighWatermark,
		lso: rp.LastStableOffset,
		consume: func(ctx context.Context) (bool, error) {
			// Batches that moved nothing: a record batch cut short by the
			// fetch size.
			return len(rp.RecordBatches) > 0, r.consume(ctx, rp)
		},
	}, nil
}

func (*franzRangeReader) outOfRange(err error) bool { return errors.Is(err, kerr.OffsetOutOfRange) }
func (*franzRangeReader) retriable(err error) bool  { return retriableFranzFetchError(err) }
func (*franzRangeReader) unknownTopic(err error) bool {
	return errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.UnknownTopicID)
}

// refreshed implements rangeClient: every retry asks the metadata again
// (forget), none is refreshed by the failure itself.
func (*franzRangeReader) refreshed(error) bool { return false }
func (r *franzRangeReader) forget(error)       { r.known = false }
func (*franzRangeReader) tooLarge() error      { return kerr.MessageTooLarge }

// lookup asks the cluster for the partition's leader, its epoch and the
// topic's id, unless the last answer still holds.
func (r *franzRangeReader) lookup(ctx context.Context) error {
	if r.known {
		return nil
	}
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = false
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(r.topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, r.cl)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	if len(resp.Topics) != 1 {
		return fmt.Errorf("metadata: %d topics answered for one: %w", len(resp.Topics), kerr.UnknownTopicOrPartition)
	}
	t := resp.Topics[0]
	if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	for _, p := range t.Partitions {
		if p.Partition != r.partition {
			continue
		}
		if p.Leader < 0 {
			err := kerr.ErrorForCode(p.ErrorCode)
			if err == nil {
				err = kerr.LeaderNotAvailable
			}
			return fmt.Errorf("metadata: %w", err)
		}
		r.known, r.leader, r.epoch, r.id = true, p.Leader, p.LeaderEpoch, t.TopicID
		return nil
	}
	return fmt.Errorf("metadata: topic has no partition %d: %w", r.partition, kerr.UnknownTopicOrPartition)
}

// fetchPartition sends one Fetch request for next to the partition leader
// and returns the partition's answer without error, or the error: a transport
// error or a *kerr.Error. A response the broker emptied because a quota
// throttles the client is (nil, nil).
func (r *franzRangeReader) fetchPartition(ctx context.Context) (*kmsg.FetchResponseTopicPartition, error) {
	size := r.wantBytes()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = int32(readMaxWait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = size
	req.IsolationLevel = 0
	if r.readCommitted {
		req.IsolationLevel = 1
	}
	req.SessionID, req.SessionEpoch = 0, -1 // no fetch session: a full fetch each time
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = r.topic, r.id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = r.partition
	rp.FetchOffset = r.next
	rp.CurrentLeaderEpoch = r.epoch
	rp.LogStartOffset = -1
	rp.PartitionMaxBytes = size
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)

	kresp, err := r.cl.Broker(int(r.leader)).Request(ctx, req)
	if err != nil {
		return nil, err
	}
	resp := kresp.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			p := &resp.Topics[i].Partitions[j]
			if p.Partition != r.partition {
				continue
			}
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, err
			}
			return p, nil
		}
	}
	if resp.ThrottleMillis > 0 {
		return nil, nil
	}
	return nil, fmt.Errorf("fetch response without the partition: %w", errIncompleteFetch)
}

// consume delivers the records of one fetch answer in [next, to) and moves
// next to where the answer ends: after its last complete batch, whatever
// that batch was (kgo.ProcessFetchPartition's offset).
func (r *franzRangeReader) consume(ctx context.Context, rp *kmsg.FetchResponseTopicPartition) error {
	fp, end := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
		Offset:         r.next,
		IsolationLevel: r.isolation,
		Topic:          r.topic,
		Partition:      r.partition,
	}, rp, r.decompressor, nil)
	if fp.Err != nil && len(fp.Records) == 0 {
		// A batch that does not decode (bad CRC, a codec it does not
		// know): a retry reads the same bytes.
		return r.fatal(fmt.Errorf("decode: %w", fp.Err))
	}
	var size int64
	for _, rec := range fp.Records {
		size += int64(len(rec.Key)+len(rec.Value)) + recordOverhead
	}
	if n := int64(len(fp.Records)); n > 0 {
		r.a.recordBytes.Store(size / n)
	}
	for _, rec := range fp.Records {
		if rec.Offset < r.next {
			continue
		}
		if rec.Offset >= r.to {
			break
		}
		if err := ctx.Err(); err != nil {
			return r.errorf("%w", err)
		}
		if err := r.fn(recordFromKgo(rec)); err != nil {
			return err
		}
		r.next = rec.Offset + 1
	}
	if end > r.next {
		r.next = min(end, r.to)
	}
	return nil
}

// retriableFranzFetchError reports whether a failed fetch or metadata
// request on franz-go may succeed later: Kafka's retriable errors (a
// leader moving, a fenced or unknown leader epoch, a topic not yet known
// to the broker asked — the caller bounds those retries), a response
// without the partition, and transport errors; not a closed client, an
// ACL, a broker too old, or an error the broker does not explain.
func retriableFranzFetchError(err error) bool {
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke):
		return ke.Retriable || ke == kerr.BrokerNotAvailable
	case errors.Is(err, kgo.ErrClientClosed), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	}
	return true // transport: a lost connection, a broker restarting
}

// fatal implements rangeClient: it wraps a cause into the *PartitionError
// ReadRange returns, as rangeReader.fatal does for sarama's errors.
func (r *franzRangeReader) fatal(err error) error {
	if errors.Is(err, kgo.ErrClientClosed) {
		return r.errorf("%w (%w)", ErrClosed, err)
	}
	if errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.UnknownTopicID) {
		err = fmt.Errorf("%w: %w", ErrUnknownTopic, err)
	}
	if errors.Is(err, kerr.OffsetOutOfRange) {
		err = fmt.Errorf("%w (%w)", err, sarama.ErrOffsetOutOfRange)
	}
	return &PartitionError{Topic: r.topic, Partition: r.partition, Err: fmt.Errorf("read at offset %d: %w", r.next, err)}
}
