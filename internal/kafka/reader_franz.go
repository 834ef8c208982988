package kafka

import (
	"context"
	"errors"
	"fmt"
	"math"
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
// retries, the log start moving, fetch sizing) is rangeReader's.

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
	return r.run(ctx)
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

// run fetches until next reaches to. While fn takes the records of one
// response, the fetch of the next is already on its way (fetchAhead): a
// long range — a restore — then waits for the broker once, not once per
// response.
func (r *franzRangeReader) run(ctx context.Context) error {
	retries, stalls := 0, 0
	var failingSince time.Time
	aheadCtx, cancelAhead := context.WithCancel(ctx)
	defer cancelAhead() // a fetch ahead nobody takes any more
	var ahead *fetchAhead
	for r.next < r.to {
		if err := ctx.Err(); err != nil {
			return r.errorf("%w", err)
		}
		var rp *kmsg.FetchResponseTopicPartition
		var err error
		if ahead != nil && ahead.offset == r.next {
			f := <-ahead.done
			rp, err = f.rp, f.err
		} else {
			err = r.lookup(ctx)
			if err == nil {
				rp, err = r.send(ctx, r.leader, r.request(r.next))
			}
		}
		ahead = nil
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return r.errorf("%w (%w)", ctx.Err(), err)
			case errors.Is(err, kerr.OffsetOutOfRange):
				if err := r.skipToLogStart(ctx); err != nil {
					return err
				}
				continue
			case !retriableFranzFetchError(err):
				return r.franzFatal(err)
			}
			if retries == 0 {
				failingSince = time.Now()
			}
			giveUp := time.Since(failingSince) > retryBudget
			if errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.UnknownTopicID) {
				giveUp = retries >= readUnknownRetries
			}
			if giveUp {
				return r.franzFatal(fmt.Errorf("%d attempts: %w", retries+1, err))
			}
			r.a.cfg.logger().Debug("kafka: read: fetch failed, retrying",
				"topic", r.topic, "partition", r.partition, "offset", r.next, "err", err)
			r.known = false
			if perr := Pause(ctx, Backoff(retries)); perr != nil {
				return r.errorf("%w (retrying after %w)", perr, err)
			}
			retries++
			continue
		}
		retries = 0
		if rp == nil {
			continue // throttled: the broker emptied the response
		}

		before := r.next
		fp, end, err := r.decode(rp)
		if err != nil {
			return err
		}
		if next := r.nextAfter(fp.Records, end); next > before && next < r.to {
			ahead = r.fetchAhead(aheadCtx, next)
		}
		if err := r.deliver(ctx, fp.Records, end); err != nil {
			return err
		}
		if r.next > before {
			stalls, r.fetchSize = 0, readFetchBytes
			if n := r.a.cfg.Tuning.MaxPartitionFetchBytes; n > 0 {
				r.fetchSize = n
			}
			continue
		}
		// No progress.
		if len(rp.RecordBatches) > 0 {
			// Only a record batch cut short by the fetch size: ask for
			// more. (Brokers since KIP-74 return a first batch whole
			// whatever the limit, so this is for other implementations.)
			if !r.unsized {
				r.unsized = true
				continue
			}
			if r.fetchSize == math.MaxInt32 {
				return r.franzFatal(fmt.Errorf("record batch at offset %d larger than %d bytes: %w", r.next, r.fetchSize, kerr.MessageTooLarge))
			}
			r.fetchSize = int32(min(2*int64(r.fetchSize), math.MaxInt32))
			continue
		}
		readable := rp.HighWatermark
		if r.readCommitted {
			readable = rp.LastStableOffset
		}
		if r.next < readable {
			if stalls++; stalls >= readMaxStalls {
				return r.franzFatal(fmt.Errorf("%d fetches at offset %d returned no record batch although the partition is readable up to %d", stalls, r.next, readable))
			}
		}
		// Otherwise nothing below to is readable yet: the broker held the
		// fetch for readMaxWait; poll again.
	}
	return nil
}

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

// request is the Fetch request for offset: sessionless, one partition,
// sized by wantBytesAt.
func (r *franzRangeReader) request(offset int64) *kmsg.FetchRequest {
	size := r.wantBytesAt(offset)
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
	rp.FetchOffset = offset
	rp.CurrentLeaderEpoch = r.epoch
	rp.LogStartOffset = -1
	rp.PartitionMaxBytes = size
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// fetched is the answer to a fetch sent ahead.
type fetched struct {
	rp  *kmsg.FetchResponseTopicPartition
	err error
}

// fetchAhead is a fetch sent for offset before the records of the previous
// response were delivered; done yields its answer once.
type fetchAhead struct {
	offset int64
	done   chan fetched
}

// fetchAhead sends the fetch for offset on a goroutine of its own, to the
// leader the last metadata answer named. Its answer, or its error, is
// taken by run's next round as if run had sent it then (errors take the
// same retries); ctx ends it if run returns first.
func (r *franzRangeReader) fetchAhead(ctx context.Context, offset int64) *fetchAhead {
	f := &fetchAhead{offset: offset, done: make(chan fetched, 1)}
	req, leader := r.request(offset), r.leader
	go func() {
		rp, err := r.send(ctx, leader, req)
		f.done <- fetched{rp, err}
	}()
	return f
}

// send sends req to leader and returns the partition's answer without
// error, or the error: a transport error or a *kerr.Error. A response the
// broker emptied because a quota throttles the client is (nil, nil). It
// reads nothing of r that run changes, so fetchAhead may call it while
// run delivers records.
func (r *franzRangeReader) send(ctx context.Context, leader int32, req *kmsg.FetchRequest) (*kmsg.FetchResponseTopicPartition, error) {
	kresp, err := r.cl.Broker(int(leader)).Request(ctx, req)
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

// decode decodes one fetch answer: its records from next on, and the
// offset after its last complete batch, whatever that batch was
// (kgo.ProcessFetchPartition's offset).
func (r *franzRangeReader) decode(rp *kmsg.FetchResponseTopicPartition) (kgo.FetchPartition, int64, error) {
	fp, end := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
		Offset:         r.next,
		IsolationLevel: r.isolation,
		Topic:          r.topic,
		Partition:      r.partition,
	}, rp, r.decompressor, nil)
	if fp.Err != nil && len(fp.Records) == 0 {
		// A batch that does not decode (bad CRC, a codec it does not
		// know): a retry reads the same bytes.
		return fp, end, r.franzFatal(fmt.Errorf("decode: %w", fp.Err))
	}
	var size int64
	for _, rec := range fp.Records {
		size += int64(len(rec.Key)+len(rec.Value)) + recordOverhead
	}
	if n := int64(len(fp.Records)); n > 0 {
		r.a.recordBytes.Store(size / n)
	}
	return fp, end, nil
}

// nextAfter is where next will be once deliver has delivered recs, an
// answer ending at end: after the last record in [next, to), or at end
// (at most to) if that is further.
func (r *franzRangeReader) nextAfter(recs []*kgo.Record, end int64) int64 {
	next := r.next
	for _, rec := range recs {
		if rec.Offset >= r.to {
			break
		}
		if rec.Offset >= next {
			next = rec.Offset + 1
		}
	}
	if end > next {
		next = min(end, r.to)
	}
	return next
}

// deliver hands the records in [next, to) to fn and moves next as
// nextAfter says.
func (r *franzRangeReader) deliver(ctx context.Context, recs []*kgo.Record, end int64) error {
	for _, rec := range recs {
		if rec.Offset < r.next {
			continue
		}
		if rec.Offset >= r.to {
			break
		}
		if err := ctx.Err(); err != nil {
			return r.errorf("%w", err)
		}
		if err := r.fn(recordFromFranz(rec)); err != nil {
			return err
		}
		r.next = rec.Offset + 1
	}
	if end > r.next {
		r.next = min(end, r.to)
	}
	return nil
}

// recordFromFranz converts a record kgo decoded.
func recordFromFranz(k *kgo.Record) Record {
	r := Record{
		Topic:     k.Topic,
		Partition: k.Partition,
		Offset:    k.Offset,
		Key:       k.Key,
		Value:     k.Value,
		Timestamp: k.Timestamp,
	}
	if len(k.Headers) > 0 {
		r.Headers = make([]Header, len(k.Headers))
		for i, h := range k.Headers {
			r.Headers[i] = Header{Key: h.Key, Value: h.Value}
		}
	}
	return r
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

// franzFatal wraps a cause into the *PartitionError ReadRange returns, as
// rangeReader.fatal does for sarama's errors.
func (r *franzRangeReader) franzFatal(err error) error {
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
