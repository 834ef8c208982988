package kafka

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

// Producer is the at-least-once sink: an idempotent producer (acks=all,
// retries that neither duplicate nor reorder a partition's records) that
// tracks the delivery of every record it was given.
//
// Records are sent asynchronously. [Producer.Flush] waits until every
// record sent before it is acknowledged and returns the first delivery error
// since the previous Flush; [Producer.Close] returns the errors no Flush
// reported. No delivery error is dropped: the first one is returned, the
// count of the others is added to its message, and every one is logged.
// A delivery error is a *PartitionError naming the partition (the
// partition -1 when the record failed before it had one), whose cause the
// classifiers of outputerrors.go read on either client.
//
// The client under it is [ResolveClient]'s choice for the Config's
// Client: sarama's async producer (saramaProducer) or franz-go's
// (franzProducer). Both partition records the same way ([PartitionForKey]).
//
// A Producer is safe for concurrent use.
type Producer struct {
	impl producer
}

// producer is what a client's at-least-once producer implements; the
// methods are [Producer]'s.
type producer interface {
	Send(ctx context.Context, r Record) error
	SendWait(ctx context.Context, recs ...Record) error
	Flush(ctx context.Context) error
	Acked() *AckedOffsets
	Close() error
}

// NewProducer connects a Producer on the Config's client.
func NewProducer(cfg Config) (*Producer, error) {
	client, err := ResolveClient(cfg.Client)
	if err != nil {
		return nil, err
	}
	var impl producer
	if client == ClientFranz {
		impl, err = newFranzProducer(cfg)
	} else {
		impl, err = newSaramaProducer(cfg)
	}
	if err != nil {
		return nil, err
	}
	return &Producer{impl: impl}, nil
}

// Send hands r to the producer. It blocks only while the producer's buffers
// are full, and returns an error if ctx is done first (r is then not sent),
// if r has no topic, or if the producer is closed. A nil error means r is
// on its way, not that it was delivered: see [Producer.Flush].
func (p *Producer) Send(ctx context.Context, r Record) error { return p.impl.Send(ctx, r) }

// Flush waits until every record sent before the call is acknowledged or
// has failed, then returns the first delivery error since the previous
// Flush (nil if none), as a *PartitionError naming the partition. If ctx is
// done first it returns ctx's error and keeps any delivery error for the
// next Flush.
func (p *Producer) Flush(ctx context.Context) error { return p.impl.Flush(ctx) }

// SendWait sends recs and waits until each is acknowledged or has failed,
// and returns the first failure among them (a *PartitionError naming the
// partition), or ctx's error if it is done first. Their failures are
// theirs alone: no Flush reports them, and SendWait reports no other
// record's. It is for records a caller needs in Kafka before it goes on
// (a task's changelog markers) while other callers flush the producer for
// their own: a failure one Flush took was then missing from the next, and
// an epoch whose output had failed could commit its offsets.
func (p *Producer) SendWait(ctx context.Context, recs ...Record) error {
	return p.impl.SendWait(ctx, recs...)
}

// Acked returns the offsets of the records the producer had acknowledged,
// for the topics it is told to track.
func (p *Producer) Acked() *AckedOffsets { return p.impl.Acked() }

// Close sends what is buffered, waits for the outcome of every record and
// releases the connections. It returns the delivery errors no Flush
// reported. Close is idempotent; later calls return nil.
func (p *Producer) Close() error { return p.impl.Close() }

// saramaProducer is the Producer on sarama's async producer, with one
// request in flight per connection so that retries neither duplicate nor
// reorder.
type saramaProducer struct {
	log *slog.Logger
	ap  sarama.AsyncProducer

	// g orders Send against Close: sarama panics on a send to the input
	// channel once it is shut down.
	g       sendGate
	once    sync.Once
	drained sync.WaitGroup

	t deliveries
	// why replaces sarama's "circuit breaker is open" by its cause.
	why causes
	// linger is the adaptive linger (linger.go); nil when the Tuning sets a
	// Linger, which sarama applies itself.
	linger *AdaptiveLinger
	// acked are the offsets of the records acknowledged, for the topics
	// tracked.
	acked AckedOffsets
}

// ProducerRetries and ProducerBackoff are the retries of the
// at-least-once Producer: about 36 s of backoff doubling from 50 ms to 1 s,
// so that a partition whose leader died is written by a retry rather than
// failed — its leadership moves once the controller fences the broker, 9 s
// later by default, and a broker restarted meanwhile takes seconds more to
// serve (an outage of 12–15 s was seen on a three-broker cluster, and an
// undelivered at-least-once output stops the application). Kafka's Java
// producer retries for its delivery.timeout.ms, 2 minutes. Errors that no
// retry cures (a partition that does not exist, a record the broker
// rejects) fail at once. Idempotence keeps the retries from duplicating
// or reordering records.
const ProducerRetries = 40

// TransactionalProducerRetries are the retries of the exactly-once
// producers (about 12 s): a transaction that cannot write for longer is
// aborted and its epoch or batch rewound, which costs less than holding
// the transaction open towards its timeout.
const TransactionalProducerRetries = 16

// ProducerBackoff is sarama's Producer.Retry.BackoffFunc for
// ProducerRetries.
func ProducerBackoff(retries, _ int) time.Duration { return Backoff(retries) }

// newSaramaProducer connects a Producer on sarama.
func newSaramaProducer(cfg Config) (*saramaProducer, error) {
	sc, err := cfg.saramaConfig()
	if err != nil {
		return nil, err
	}
	sc.Producer.Idempotent = true
	sc.Producer.RequiredAcks = sarama.WaitForAll
	sc.Net.MaxOpenRequests = 1
	sc.Producer.Retry.Max = ProducerRetries
	sc.Producer.Retry.BackoffFunc = ProducerBackoff
	sc.Producer.Return.Successes = true
	sc.Producer.Return.Errors = true
	sc.Producer.MaxMessageBytes = cfg.Tuning.MessageBytes()
	sc.Producer.Partitioner = NewKeyPartitioner
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	ap, err := sarama.NewAsyncProducer(cfg.Brokers, sc)
	if err != nil {
		return nil, fmt.Errorf("kafka: new producer: %w", err)
	}
	p := &saramaProducer{
		log: cfg.logger(),
		ap:  ap,
		g:   newSendGate(),
	}
	if cfg.Tuning.Linger == 0 {
		p.linger = NewAdaptiveLinger(p.tick)
	}
	p.t.init()
	p.drained.Add(2)
	go p.drainSuccesses()
	go p.drainErrors()
	return p, nil
}

// Send implements [Producer.Send].
func (p *saramaProducer) Send(ctx context.Context, r Record) error {
	if err := p.g.enter(ctx, r); err != nil {
		return err
	}
	defer p.g.leave()
	msg := MessageFromRecord(r)
	seq := p.t.register()
	msg.Metadata = seq
	// What a full linger does not hand over before ctx is done stays held:
	// r is on its way either way.
	if p.linger != nil && p.linger.Add(msg, func(m *sarama.ProducerMessage) error { return p.input(ctx, m) }) {
		return nil
	}
	if err := p.input(ctx, msg); err != nil {
		p.t.complete(seq, nil)
		return sendErr(r.Topic, err)
	}
	return nil
}

// Flush implements [Producer.Flush].
func (p *saramaProducer) Flush(ctx context.Context) error {
	p.g.mu.RLock()
	var err error
	if !p.g.closed {
		err = p.handHeld(ctx)
	}
	p.g.mu.RUnlock()
	if err != nil {
		return fmt.Errorf("kafka: flush: %w", err)
	}
	return p.t.flush(ctx)
}

// Acked implements [Producer.Acked].
func (p *saramaProducer) Acked() *AckedOffsets { return &p.acked }

// Close implements [Producer.Close].
func (p *saramaProducer) Close() error {
	var err error
	p.once.Do(func() {
		p.g.shut(p.handHeldAtClose)
		p.ap.AsyncClose()
		p.drained.Wait()
		err = p.t.closeErr()
	})
	return err
}

// input hands m to sarama, blocking while its input buffer is full until
// ctx is done or p is closing.
func (p *saramaProducer) input(ctx context.Context, m *sarama.ProducerMessage) error {
	return Input(ctx, p.ap.Input(), m, p.g.closing, ErrClosed)
}

// Input hands m to a sarama producer's input, blocking while its buffer is
// full. If ctx is done first it returns ctx's error; if stop closes first
// (a nil stop never does), stopped. m is then not sent.
func Input(ctx context.Context, in chan<- *sarama.ProducerMessage, m *sarama.ProducerMessage, stop <-chan struct{}, stopped error) error {
	return offer(in, m, ctx.Done(), ctx.Err, stop, stopped)
}

// tick ends a window of the linger: it hands over what is held.
func (p *saramaProducer) tick() {
	p.g.mu.RLock()
	defer p.g.mu.RUnlock()
	if p.g.closed { // Close handed everything over
		return
	}
	// An error means p is closing: Close hands the rest over.
	_ = p.linger.Tick(func(m *sarama.ProducerMessage) error { return p.input(context.Background(), m) })
}

// handHeld hands over what is held (Flush), without waiting for the
// window to end. The caller holds p.g.mu (read or write) with p open.
func (p *saramaProducer) handHeld(ctx context.Context) error {
	if p.linger == nil {
		return nil
	}
	return p.linger.Hand(func(m *sarama.ProducerMessage) error { return p.input(ctx, m) })
}

// handHeldAtClose hands over what is held, waiting for room in sarama's
// input however long it takes (sarama drains it until AsyncClose), and
// stops the window's timer. The caller holds p.g.mu with p closed: no record
// is given, and no window ends, after it.
func (p *saramaProducer) handHeldAtClose() {
	if p.linger == nil {
		return
	}
	p.linger.Stop()
	_ = p.linger.Hand(func(m *sarama.ProducerMessage) error {
		p.ap.Input() <- m
		return nil
	})
}

func (p *saramaProducer) drainSuccesses() {
	defer p.drained.Done()
	for msg := range p.ap.Successes() {
		p.acked.Note(msg.Topic, msg.Partition, msg.Offset)
		p.delivered(msg, nil)
	}
}

func (p *saramaProducer) drainErrors() {
	defer p.drained.Done()
	for pe := range p.ap.Errors() {
		if pe == nil {
			continue
		}
		if pe.Msg == nil {
			err := fmt.Errorf("kafka: produce: %w", pe.Err)
			p.log.Warn("kafka: delivery failed", "err", err)
			p.t.complete(0, err)
			continue
		}
		err := &PartitionError{Topic: pe.Msg.Topic, Partition: pe.Msg.Partition, Err: p.why.explain(pe.Msg.Topic, pe.Err)}
		p.log.Warn("kafka: delivery failed", "err", err)
		p.delivered(pe.Msg, err)
	}
}
