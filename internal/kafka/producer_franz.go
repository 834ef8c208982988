package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ProducerDeliveryTimeout is how long the franz-go at-least-once producer
// keeps retrying a record, from Send, before it fails it: Kafka's Java
// producer's delivery.timeout.ms. Leader changes and brokers restarting
// are ridden out within it (a partition's leadership moves 9 s after its
// leader died by default, and a three-broker cluster was seen refusing
// writes for 12–15 s); errors no retry cures (a partition that does not
// exist after kgo's unknown-topic retries, a record the broker rejects, an
// ACL) fail at once. A record sent in a request stays until its outcome is
// known whatever the timeout: kgo does not fail an idempotent request in
// flight, whose records the broker may have written.
//
// It is not kgo's RecordDeliveryTimeout, which counts from the record's
// timestamp: weir's records carry their event time, which may be days
// old. The records of each deliveryWindow share a context that ends
// deliveryTimeout after the window opened, and kgo fails a buffered batch
// whose first record's context has ended.
const ProducerDeliveryTimeout = 2 * time.Minute

// deliveryTimeout is ProducerDeliveryTimeout; tests shorten it.
var deliveryTimeout = ProducerDeliveryTimeout

// deliveryWindow is how often a franzProducer opens a new delivery
// window: records sent within one share its deadline, so a record fails
// up to that much earlier than deliveryTimeout after its Send.
const deliveryWindow = time.Second

// franzMaxInFlight bounds the records a franzProducer holds: given to kgo
// and not yet acknowledged or failed. Send blocks while they are that
// many (kgo's own default bound on buffered records).
const franzMaxInFlight = 50_000

// franzProducer is the Producer on franz-go: an idempotent kgo client
// (acks=all; kgo keeps up to five requests in flight per broker and
// retries them in sequence-number order, so a partition's records neither
// duplicate nor reorder across retries), weir's partitioner
// (franzPartitioner: murmur2 as the Java client and the sarama producer
// do), and per-record outcomes from kgo's promises, which kgo calls one at
// a time in the order of each partition's records.
//
// No AdaptiveLinger: it was built for sarama, which sends a partition's
// records as soon as the previous request to the broker is answered, one
// request at a time, and has no flush — a fixed linger delays every
// commit by its length, so the producer lingered only while loaded. kgo
// already accumulates records in each partition's batch while its
// requests (up to five per broker) are in flight, so batches grow with
// the load by themselves without delaying a record at a trickle, and a
// Linger set in the Tuning is kgo's own (ProducerLinger). Holding records
// ahead of kgo would add a copy and a lock per record to what kgo does
// already.
type franzProducer struct {
	log *slog.Logger
	cl  *kgo.Client

	// g orders Send against Close: no record is given to kgo once Close
	// started flushing it.
	g    sendGate
	once sync.Once

	// slots holds a token per record given to kgo and not yet complete.
	// Send waits for room here, where it can give up when its ctx is done,
	// rather than in kgo's Produce: the ctx given to Produce also cancels
	// the record once buffered, and a record Send accepted is on its way.
	slots chan struct{}

	// window is the delivery window of the records sent now (its
	// context's deadline is theirs); windows replaces it every
	// deliveryWindow until stopWindows closes.
	window      atomic.Pointer[window]
	timeout     time.Duration // deliveryTimeout when p was created
	stopWindows chan struct{}
	windowsDone chan struct{}

	t     deliveries
	acked AckedOffsets
	// promise is p.delivered, bound once rather than per record.
	promise func(*kgo.Record, error)
}

// window is a delivery window: the context of the records sent in it,
// done deliveryTimeout after it opened.
type window struct {
	ctx    context.Context
	cancel context.CancelFunc // releases the timer at Close
}

func newWindow(timeout time.Duration) *window {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	return &window{ctx, cancel}
}

// windows opens a delivery window every deliveryWindow until Close, and
// then releases the windows' timers (every record is complete by then).
func (p *franzProducer) windows() {
	defer close(p.windowsDone)
	tick := time.NewTicker(deliveryWindow)
	defer tick.Stop()
	var open []*window // the windows whose timer may still run
	for {
		select {
		case <-tick.C:
			w := newWindow(p.timeout)
			p.window.Store(w)
			open = append(open, w)
			if n := int(p.timeout/deliveryWindow) + 2; len(open) > n {
				open[0].cancel() // expired already: its timer is gone
				open = slices.Delete(open, 0, 1)
			}
		case <-p.stopWindows:
			for _, w := range open {
				w.cancel()
			}
			p.window.Load().cancel()
			return
		}
	}
}

// newFranzProducer connects a Producer on franz-go.
func newFranzProducer(cfg Config) (*franzProducer, error) {
	opts, err := FranzOpts(cfg)
	if err != nil {
		return nil, err
	}
	opts = append(opts,
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(franzPartitioner{}),
		// Room for the records whose promise is running: kgo counts a
		// record until its promise returned, Send from before it ran.
		kgo.MaxBufferedRecords(franzMaxInFlight+1024),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka: new producer: %w", err)
	}
	p := &franzProducer{
		log:         cfg.logger(),
		cl:          cl,
		g:           newSendGate(),
		slots:       make(chan struct{}, franzMaxInFlight),
		stopWindows: make(chan struct{}),
		windowsDone: make(chan struct{}),
	}
	p.timeout = deliveryTimeout
	p.window.Store(newWindow(p.timeout))
	p.promise = p.delivered
	p.t.init()
	go p.windows()
	return p, nil
}

// franzOut is a record given to kgo with what its promise needs. It is the
// kgo Record's Context, which kgo carries to the partitioner and the
// promise untouched. Its embedded context is the record's delivery
// window's: kgo fails a buffered batch once its first record's context is
// done, and nothing else cancels a record Send accepted.
type franzOut struct {
	context.Context
	rec kgo.Record
	seq uint64
	// own is the SendWait the record belongs to, nil for a Send.
	own *ownDeliveries
	// partitions is, when the record asked for a partition its topic does
	// not have, the topic's partition count (set by franzPartitioner).
	partitions int
}

func (p *franzProducer) newOut(r Record) *franzOut {
	o := &franzOut{Context: p.window.Load().ctx}
	o.rec = kgo.Record{
		Topic:     r.Topic,
		Partition: r.Partition,
		Key:       r.Key,
		Value:     r.Value,
		Timestamp: r.Timestamp,
		Context:   o,
	}
	if o.rec.Partition < 0 {
		o.rec.Partition = PartitionByKey
	}
	if len(r.Headers) > 0 {
		o.rec.Headers = make([]kgo.RecordHeader, len(r.Headers))
		for i, h := range r.Headers {
			o.rec.Headers[i] = kgo.RecordHeader{Key: h.Key, Value: h.Value}
		}
	}
	return o
}

// Send implements [Producer.Send].
func (p *franzProducer) Send(ctx context.Context, r Record) error {
	if err := p.g.enter(ctx, r); err != nil {
		return err
	}
	defer p.g.leave()
	if err := p.acquire(ctx); err != nil {
		return sendErr(r.Topic, err)
	}
	o := p.newOut(r)
	o.seq = p.t.register()
	p.cl.Produce(context.Background(), &o.rec, p.promise)
	return nil
}

// SendWait implements [Producer.SendWait].
func (p *franzProducer) SendWait(ctx context.Context, recs ...Record) error {
	return sendWait(ctx, recs, p.sendOwn)
}

// sendOwn gives recs to kgo as w's.
func (p *franzProducer) sendOwn(ctx context.Context, w *ownDeliveries, recs []Record) error {
	for _, r := range recs {
		if r.Topic == "" {
			return fmt.Errorf("%w: record without topic", ErrConfig)
		}
	}
	p.g.mu.RLock()
	defer p.g.mu.RUnlock()
	if p.g.closed {
		return errSendClosed()
	}
	for _, r := range recs {
		if err := p.acquire(ctx); err != nil {
			return sendErr(r.Topic, err)
		}
		o := p.newOut(r)
		o.seq, o.own = p.t.register(), w
		p.cl.Produce(context.Background(), &o.rec, p.promise)
	}
	return nil
}

// acquire takes a slot for one record, waiting while every slot is taken
// until ctx is done or p is closing. The caller holds p.g.mu (read).
func (p *franzProducer) acquire(ctx context.Context) error {
	return offer(p.slots, struct{}{}, ctx.Done(), ctx.Err, p.g.closing, ErrClosed)
}

// delivered is the promise of every record: kgo calls it once per record,
// one call at a time.
func (p *franzProducer) delivered(r *kgo.Record, err error) {
	<-p.slots
	o, _ := r.Context.(*franzOut)
	if err == nil {
		p.acked.Note(r.Topic, r.Partition, r.Offset)
	} else {
		switch {
		case o != nil && o.partitions > 0:
			err = fmt.Errorf("%w %d: topic %q has %d partitions (%w)",
				ErrInvalidPartition, r.Partition, r.Topic, o.partitions, err)
		case errors.Is(err, context.DeadlineExceeded):
			err = fmt.Errorf("%w: not delivered within %v", kgo.ErrRecordTimeout, p.timeout)
		}
		err = &PartitionError{Topic: r.Topic, Partition: r.Partition, Err: err}
		p.log.Warn("kafka: delivery failed", "err", err)
	}
	switch {
	case o == nil:
		p.t.complete(0, err)
	case o.own != nil:
		p.t.complete(o.seq, nil)
		o.own.complete(err)
	default:
		p.t.complete(o.seq, err)
	}
}

// Flush implements [Producer.Flush]. With a Linger in the Tuning it waits
// for it as sarama's producer does; kgo's own Flush would also wait for
// the records other callers send meanwhile.
func (p *franzProducer) Flush(ctx context.Context) error { return p.t.flush(ctx) }

// Acked implements [Producer.Acked].
func (p *franzProducer) Acked() *AckedOffsets { return &p.acked }

// closeFlushTimeout bounds how long Close waits for the records still
// buffered before it fails them.
const closeFlushTimeout = 5 * time.Second

// Close implements [Producer.Close]. It waits up to closeFlushTimeout for
// the records still buffered, then fails those not in a request
// (kgo.ErrAborting) and waits for the requests in flight, whose outcome
// kgo must know. The records a Close finds are outputs of work whose
// offsets the runtime has not committed: a stop during a broker outage
// must not wait out their delivery timeout (sarama's producer, likewise,
// fails the records it is retrying when it shuts down).
func (p *franzProducer) Close() error {
	var err error
	p.once.Do(func() {
		p.g.shut(func() {})
		ctx, cancel := context.WithTimeout(context.Background(), closeFlushTimeout)
		if p.cl.Flush(ctx) != nil {
			_ = p.cl.AbortBufferedRecords(context.Background())
		}
		cancel()
		p.cl.Close()
		close(p.stopWindows)
		<-p.windowsDone
		err = p.t.closeErr()
	})
	return err
}

// franzPartitioner is the franz-go producers' kgo.Partitioner, the
// counterpart of sarama's keyPartitioner: an explicit partition (>= 0) is
// used as is, a non-nil key is hashed with [PartitionForKey] (so a record
// lands on the same partition whichever client wrote it, and where Kafka's
// Java client would put it), a nil key goes round robin over the writable
// partitions. An explicit partition the topic does not have fails the
// record (kgo fails a choice out of range), and the partition count is
// noted in its franzOut for the error to say so.
type franzPartitioner struct{}

// ForTopic implements kgo.Partitioner.
func (franzPartitioner) ForTopic(string) kgo.TopicPartitioner { return &franzTopicPartitioner{} }

// franzTopicPartitioner partitions one topic's records. kgo calls it for
// one record at a time, so next needs no lock.
type franzTopicPartitioner struct{ next uint32 }

// RequiresConsistency implements kgo.TopicPartitioner: only null-key
// records may go to whichever partition is writable.
func (*franzTopicPartitioner) RequiresConsistency(r *kgo.Record) bool {
	return r.Partition >= 0 || r.Key != nil
}

// Partition implements kgo.TopicPartitioner. n counts all the topic's
// partitions when RequiresConsistency is true, and kgo maps the index
// returned to the partition with that number; otherwise the writable ones.
func (p *franzTopicPartitioner) Partition(r *kgo.Record, n int) int {
	if r.Partition >= 0 {
		if int(r.Partition) >= n {
			if o, ok := r.Context.(*franzOut); ok {
				o.partitions = n
			}
			return -1
		}
		return int(r.Partition)
	}
	if r.Key == nil {
		p.next++
		return int((p.next - 1) % uint32(n))
	}
	part, _ := PartitionForKey(r.Key, int32(n)) // n >= 1: kgo partitions no topic without partitions
	return int(part)
}
