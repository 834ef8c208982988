package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/weirstream/weir/internal/kafka"
)

// franzProducer is one kgo transactional client (one producer id epoch
// lineage) and what the open transaction has done with it.
//
// How the consumer offsets join a transaction depends on the cluster:
//
//   - Transactions v2 (KIP-890 part 2, transaction.version 2, Kafka 4.0+):
//     a produce adds its partition to the transaction, TxnOffsetCommit v5
//     adds the group, and every EndTxn bumps the epoch. Once one record of
//     the transaction is acknowledged, kgo's EndTransaction will send
//     EndTxn, so the offsets go at once through cl (TxnOffsetCommit v5)
//     while the other records are still in flight.
//   - Otherwise (v1, and a v2 transaction without records): AddOffsetsToTxn
//     and TxnOffsetCommit v4 through raw, then EndTxn through kgo if it
//     has partitions in the transaction, else through raw (v4: no epoch
//     bump kgo would not know of). v1 offsets go out at once too: they
//     do not depend on the records.
type franzProducer struct {
	log   *slog.Logger
	cl    *kgo.Client // transactional: records, EndTxn, v2 offsets
	raw   *kgo.Client // EndTxn and TxnOffsetCommit capped at v4: the v1 requests
	v2    bool
	cfg   Config
	ctx   context.Context // the records' context, cancelled by close
	stop  context.CancelFunc
	hooks *franzHooks
	acked *kafka.AckedOffsets // the session's
	parts sync.Map            // topic → *atomic.Int32, its partition count as kgo knows it

	t        tracker
	acks     atomic.Int64  // records of the open transaction acknowledged
	firstAck chan struct{} // closed at the open transaction's first acknowledgement
	calls    calls         // EndTransaction, raw requests, offsets calls

	// The open transaction's offsets call and raw start (v1 path); set
	// with the session's op held.
	oc         *offsetsCall
	rawStarted atomic.Bool
	rawID      int64
	rawEpoch   int16

	once sync.Once
}

// openFranz creates the clients and initializes the producer id
// (InitProducerId: fences older producers of the id, aborts or completes
// what they left open). It blocks; callers run it through do.
func openFranz(ctx context.Context, cfg Config, watch *connWatch, log *slog.Logger, acked *kafka.AckedOffsets) (*franzProducer, error) {
	base, err := kafka.FranzOpts(cfg.Kafka)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	p := &franzProducer{log: log, cfg: cfg, acked: acked, hooks: &franzHooks{watch: watch}}
	p.t.init()
	p.ctx, p.stop = context.WithCancel(context.Background())
	common := append(base,
		kgo.RequestTimeoutOverhead(cfg.RequestTimeout),
		kgo.RequestRetries(cfg.txnRetryMax),
		kgo.WithHooks(p.hooks),
	)
	// TxnOffsetCommit v6 names topics by id; weir's offsets name them.
	v5 := kversion.Stable()
	v5.SetMaxKeyVersion(int16(kmsg.TxnOffsetCommit), 5)
	p.cl, err = kgo.NewClient(append(slices.Clone(common),
		kgo.TransactionalID(cfg.TransactionalID),
		kgo.TransactionTimeout(cfg.TransactionTimeout),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProduceRequestTimeout(cfg.produceTimeout()),
		// Ride out a short leader election, as long as the sarama session
		// does. No RecordDeliveryTimeout: kgo
		// measures it from the record's timestamp, which is event time
		// (a replayed input is "late" at once); Commit bounds the wait
		// at the transaction timeout instead.
		kgo.RecordRetries(recordRetries()),
		kgo.RetryBackoffFn(func(tries int) time.Duration { return kafka.Backoff(max(tries-1, 0)) }),
		// A record retried waits for a metadata refresh, which kgo spaces
		// by this (5 s by default: the retries would take minutes); the
		// Java client's retry.backoff.ms is 100 ms.
		kgo.MetadataMinAge(metadataMinAge),
		kgo.RecordPartitioner(kgo.BasicConsistentPartitioner(p.partitioner)),
		kgo.MaxVersions(v5),
	)...)
	if err != nil {
		p.stop()
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	capped := kversion.Stable()
	capped.SetMaxKeyVersion(int16(kmsg.EndTxn), 4)
	capped.SetMaxKeyVersion(int16(kmsg.TxnOffsetCommit), 4)
	p.raw, err = kgo.NewClient(append(slices.Clone(common), kgo.MaxVersions(capped))...)
	if err != nil {
		p.cl.Close()
		p.stop()
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if _, _, err := p.cl.ProducerID(ctx); err != nil {
		p.close()
		return nil, bridge(err)
	}
	if p.v2, err = transactionsV2(ctx, p.cl); err != nil {
		p.close()
		return nil, bridge(err)
	}
	return p, nil
}

// metadataMinAge is the franz-go session's kgo.MetadataMinAge.
const metadataMinAge = 250 * time.Millisecond

// retryWindow is how long the sarama session retries a record
// (kafka.TransactionalProducerRetries waits of kafka.Backoff): the
// franz-go session retries one within the same window.
var retryWindow = func() time.Duration {
	var d time.Duration
	for n := range kafka.TransactionalProducerRetries {
		d += kafka.Backoff(n)
	}
	return d
}()

// recordRetries is how many times the franz-go session retries a record
// the broker refused for a passing reason: as many as fit in retryWindow,
// each wait being kafka.Backoff and a metadata refresh. A record kgo gives
// up on is known unwritten: the transaction is aborted and redone.
func recordRetries() int {
	var spent time.Duration
	for n := range kafka.TransactionalProducerRetries {
		spent += kafka.Backoff(n) + metadataMinAge
		if spent > retryWindow {
			return n
		}
	}
	return kafka.TransactionalProducerRetries
}

// unsettledAfter is how long a commit waits for records kgo still
// retries: the transaction timeout (the broker aborts the transaction
// then), but at least the retries of a record and one produce request, so
// that a record refused past the retries fails with its own error first.
func (c Config) unsettledAfter() time.Duration {
	return max(c.TransactionTimeout, retryWindow+c.produceTimeout())
}

// produceTimeout is the producers' acks timeout (sarama's
// Producer.Timeout, kgo's ProduceRequestTimeout).
func (c Config) produceTimeout() time.Duration {
	return min(10*time.Second, (c.RequestTimeout * 2 / 3).Truncate(time.Millisecond))
}

// transactionsV2 reports whether the cluster runs transactions v2, as kgo
// decides it (transaction.version finalized at 2 or more, and the request
// versions that carry it).
func transactionsV2(ctx context.Context, cl *kgo.Client) (bool, error) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "weir", "1"
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return false, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return false, err
	}
	level := int16(0)
	if resp.FinalizedFeaturesEpoch != -1 {
		for _, f := range resp.FinalizedFeatures {
			if f.Name == "transaction.version" {
				level = f.MaxVersionLevel
			}
		}
	}
	maxOf := func(k kmsg.Key) int16 {
		for _, a := range resp.ApiKeys {
			if a.ApiKey == int16(k) {
				return a.MaxVersion
			}
		}
		return -1
	}
	return level >= 2 && maxOf(kmsg.Produce) >= 12 && maxOf(kmsg.EndTxn) >= 5 && maxOf(kmsg.TxnOffsetCommit) >= 5, nil
}

// partitioner partitions like internal/kafka's producer: an explicit
// partition as is (kgo fails one out of range), kafka.PartitionByKey by
// the Java client's murmur2 of the key, round robin for a nil key.
func (p *franzProducer) partitioner(topic string) func(*kgo.Record, int) int {
	count, _ := p.parts.LoadOrStore(topic, new(atomic.Int32))
	n32 := count.(*atomic.Int32)
	next := 0
	return func(r *kgo.Record, n int) int {
		n32.Store(int32(n))
		switch {
		case r.Partition >= 0:
			return int(r.Partition)
		case r.Key == nil:
			next = (next + 1) % n
			return next
		}
		part, err := kafka.PartitionForKey(r.Key, int32(n))
		if err != nil {
			return -1 // kgo fails the record
		}
		return int(part)
	}
}

// produce hands r to kgo for the open transaction.
func (p *franzProducer) produce(r kafka.Record) {
	kr := &kgo.Record{Topic: r.Topic, Partition: r.Partition, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
	if kr.Partition < 0 {
		kr.Partition = kafka.PartitionByKey
	}
	if len(r.Headers) > 0 {
		kr.Headers = make([]kgo.RecordHeader, len(r.Headers))
		for i, h := range r.Headers {
			kr.Headers[i] = kgo.RecordHeader{Key: h.Key, Value: h.Value}
		}
	}
	explicit := kr.Partition
	p.t.add()
	p.cl.Produce(p.ctx, kr, func(kr *kgo.Record, err error) {
		if err == nil {
			if p.acks.Add(1) == 1 {
				close(p.firstAck)
			}
			p.acked.Note(kr.Topic, kr.Partition, kr.Offset)
			p.t.done(nil)
			return
		}
		if explicit >= 0 && p.outOfRange(kr.Topic, explicit) {
			err = fmt.Errorf("%w: %d (%w)", errPartitionOutOfRange, explicit, err)
		}
		err = &kafka.PartitionError{Topic: kr.Topic, Partition: kr.Partition, Err: bridge(err)}
		if p.t.done(err) {
			p.log.Warn("exactlyonce: record failed; the transaction cannot commit", "err", err)
		} else {
			p.log.Debug("exactlyonce: record failed", "err", err)
		}
	})
}

// outOfRange reports whether partition is beyond the topic's partitions
// as kgo last saw them.
func (p *franzProducer) outOfRange(topic string, partition int32) bool {
	c, ok := p.parts.Load(topic)
	if !ok {
		return false
	}
	n := c.(*atomic.Int32).Load()
	return n > 0 && partition >= n
}

// begin opens a transaction in kgo.
func (p *franzProducer) begin() error {
	p.t.reset()
	p.acks.Store(0)
	p.firstAck = make(chan struct{})
	p.oc = nil
	p.rawStarted.Store(false)
	return bridge(p.cl.BeginTransaction())
}

// pendingOffsets returns the open transaction's offsets call, nil if none.
func (p *franzProducer) pendingOffsets() *offsetsCall { return p.oc }

// sendOffsets starts sending req's offsets into the open transaction
// (whose Sends are over), retrying what the broker answers as retriable
// until ctx ends. With transactions v2 it waits for the first record
// acknowledged — from then on kgo will send EndTxn — and sends
// TxnOffsetCommit v5 while the other records are in flight; if none is
// (no records), it takes the v1 requests. If every record failed it sends
// nothing: the transaction cannot commit.
func (p *franzProducer) sendOffsets(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) *offsetsCall {
	oc := &offsetsCall{done: make(chan struct{})}
	p.oc = oc
	idle, first := p.t.idle(), p.firstAck
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(p.ctx, cancel) // close ends the call
	p.calls.wg.Go(func() {
		defer close(oc.done)
		defer stop()
		defer cancel()
		v5 := false
		if p.v2 {
			select {
			case <-first:
				v5 = true
			case <-idle:
				v5 = p.acks.Load() > 0
				if !v5 && p.t.err() != nil {
					return
				}
			case <-ctx.Done():
				oc.err = ctx.Err()
				return
			}
		}
		oc.err = p.offsets(ctx, req, v5)
	})
	return oc
}

// offsets sends the offsets: TxnOffsetCommit v5 through cl, or
// AddOffsetsToTxn then TxnOffsetCommit v4 through raw.
func (p *franzProducer) offsets(ctx context.Context, req *kmsg.TxnOffsetCommitRequest, v5 bool) error {
	id, epoch, err := p.cl.ProducerID(ctx)
	if err != nil {
		return abandonedIfDone(ctx, bridge(err))
	}
	cl := p.cl
	if !v5 {
		cl = p.raw
		p.rawID, p.rawEpoch = id, epoch
		p.rawStarted.Store(true)
		add := kmsg.NewPtrAddOffsetsToTxnRequest()
		add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = p.cfg.TransactionalID, id, epoch, req.Group
		if err := p.retry(ctx, func() error {
			resp, err := add.RequestWith(ctx, p.raw)
			if err != nil {
				return err
			}
			return kerr.ErrorForCode(resp.ErrorCode)
		}); err != nil {
			return err
		}
	}
	r := *req
	r.TransactionalID, r.ProducerID, r.ProducerEpoch = p.cfg.TransactionalID, id, epoch
	return p.retry(ctx, func() error {
		resp, err := r.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		for _, t := range resp.Topics {
			for _, pt := range t.Partitions {
				if err := kerr.ErrorForCode(pt.ErrorCode); err != nil {
					return fmt.Errorf("partition %s-%d: %w", t.Topic, pt.Partition, err)
				}
			}
		}
		return nil
	})
}

// retry runs fn until it succeeds, fails with an error not worth
// resending, or ctx ends (an *abandonedError). The requests retried add to
// or commit offsets in the open transaction, which resending repeats
// without effect; one answered REQUEST_TIMED_OUT or lost with its
// connection is resent too.
func (p *franzProducer) retry(ctx context.Context, fn func() error) error {
	for attempt := 0; ; attempt++ {
		err := bridge(fn())
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || errors.Is(err, kgo.ErrClientClosed) {
			return &abandonedError{err: err}
		}
		if classifyFranz(err, false) != errTransient && !networkErrorFranz(err) {
			return err
		}
		p.log.Warn("exactlyonce: offsets, retrying", "attempt", attempt+1, "err", err)
		if perr := kafka.Pause(ctx, p.cfg.txnBackoff(attempt, 0)); perr != nil {
			return &abandonedError{err: fmt.Errorf("%w (after %w)", perr, err)}
		}
	}
}

// end ends the open transaction: kgo's EndTransaction, and EndTxn v4
// through raw when kgo had no partition in it but the v1 offsets started
// it on the broker (and kgo did not re-initialize the producer id, which
// aborted it). An abort first fails the records kgo still buffers.
func (p *franzProducer) end(ctx context.Context, commit bool) error {
	if !commit {
		if err := p.cl.AbortBufferedRecords(ctx); err != nil {
			return err
		}
	}
	before := p.hooks.endTxns.Load()
	if err := p.cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		return bridge(err)
	}
	if p.hooks.endTxns.Load() != before || !p.rawStarted.Load() {
		return nil
	}
	id, epoch, err := p.cl.ProducerID(ctx)
	if err != nil {
		return bridge(err)
	}
	if id != p.rawID || epoch != p.rawEpoch {
		return nil // InitProducerId ended it
	}
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = p.cfg.TransactionalID, id, epoch, commit
	for attempt := 0; ; attempt++ {
		resp, err := req.RequestWith(ctx, p.raw)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err = bridge(err); err == nil || classifyFranz(err, false) != errTransient {
			return err
		}
		if perr := kafka.Pause(ctx, p.cfg.txnBackoff(attempt, 0)); perr != nil {
			return fmt.Errorf("%w (after %w)", perr, err)
		}
	}
}

// close shuts both clients down: kgo fails what is buffered and what
// waits for a retry, and the calls still running (an offsets call a
// failed Commit left, an abandoned EndTransaction) fail at once. It does
// not end an open transaction. Idempotent.
func (p *franzProducer) close() {
	p.once.Do(func() {
		p.hooks.closing.Store(true)
		p.stop()
		p.cl.Close()
		p.raw.Close()
		p.calls.wait()
		<-p.t.idle()
	})
}

// offsetsCall is the offsets of a Commit on their way.
type offsetsCall struct {
	done chan struct{}
	err  error // valid once done is closed
}

// wait returns the call's error, or an *abandonedError if ctx ends first.
func (c *offsetsCall) wait(ctx context.Context) error {
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return &abandonedError{err: ctx.Err()}
	}
}

// abandonedError is a request whose answer no one waited for: it may
// still reach the broker.
type abandonedError struct{ err error }

func (e *abandonedError) Error() string { return e.err.Error() }
func (e *abandonedError) Unwrap() error { return e.err }

func abandonedIfDone(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return &abandonedError{err: err}
	}
	return err
}

// franzHooks counts, through kgo's hooks, the requests that failed on
// their connection (in the session's connWatch) and the EndTxn requests
// written (which tells whether kgo's EndTransaction sent one).
type franzHooks struct {
	watch   *connWatch
	closing atomic.Bool // the clients are closing: failures are expected
	endTxns atomic.Int64
}

var (
	_ kgo.HookBrokerWrite = (*franzHooks)(nil)
	_ kgo.HookBrokerRead  = (*franzHooks)(nil)
)

// OnBrokerWrite implements kgo.HookBrokerWrite.
func (h *franzHooks) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	switch {
	case err != nil:
		if !h.closing.Load() {
			h.watch.failures.Add(1)
		}
	case key == int16(kmsg.EndTxn):
		h.endTxns.Add(1)
	}
}

// OnBrokerRead implements kgo.HookBrokerRead.
func (h *franzHooks) OnBrokerRead(_ kgo.BrokerMetadata, _ int16, _ int, _, _ time.Duration, err error) {
	if err != nil && !h.closing.Load() {
		h.watch.failures.Add(1)
	}
}

// offsetsOf validates the arguments of Commit and builds the
// TxnOffsetCommit request of the offsets (without the producer's id and
// epoch); nil without offsets.
func offsetsOf(offsets map[TopicPartition]int64, gm kafka.GroupMetadata) (*kmsg.TxnOffsetCommitRequest, error) {
	tps, err := commitPartitions(offsets, gm)
	if err != nil || tps == nil {
		return nil, err
	}
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Group, req.Generation, req.MemberID = gm.GroupID, gm.GenerationID, gm.MemberID
	if gm.InstanceID != "" {
		id := gm.InstanceID
		req.InstanceID = &id
	}
	for _, tp := range tps {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != tp.Topic {
			t := kmsg.NewTxnOffsetCommitRequestTopic()
			t.Topic = tp.Topic
			req.Topics = append(req.Topics, t)
		}
		pt := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		pt.Partition, pt.Offset, pt.LeaderEpoch = tp.Partition, offsets[tp], -1
		t := &req.Topics[len(req.Topics)-1]
		t.Partitions = append(t.Partitions, pt)
	}
	return req, nil
}
