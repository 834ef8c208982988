package txn

import (
	"context"
	"errors"
	"fmt"

	"github.com/IBM/sarama"

	"github.com/weirstream/weir/internal/kafka"
)

// saramaSession is the Session on sarama's transactional AsyncProducer.
// Its states and locking are core's.
type saramaSession struct {
	core[*producer]
	// linger is the adaptive linger (kafka.AdaptiveLinger): records of the
	// open transaction held while Sends come fast, handed to sarama every
	// 5 ms and at once by Commit. nil when the configuration sets a
	// linger, which sarama applies itself (and Commit waits out).
	linger *kafka.AdaptiveLinger
}

// newSarama initializes the producer (cfg is valid, with defaults).
func newSarama(ctx context.Context, cfg Config) (*saramaSession, error) {
	s := &saramaSession{}
	if cfg.Kafka.Tuning.Linger == 0 {
		s.linger = kafka.NewAdaptiveLinger(s.tick)
	}
	s.open = func(context.Context) (*producer, error) {
		sc, err := s.cfg.saramaConfig(s.watch)
		if err != nil {
			return nil, err
		}
		return openProducer(s.cfg.Kafka.Brokers, sc, s.log, &s.acked)
	}
	s.initKind = func(err error) error { return classify(err, 0, false) }
	s.onReset = s.dropHeld // the open transaction is abandoned
	if err := s.init(ctx, cfg, cfg.Logger.With("transactional_id", cfg.TransactionalID)); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// Send hands r to the open transaction and returns; delivery is
// asynchronous, and Commit waits for it. r.Partition >= 0 is used as is,
// kafka.PartitionByKey partitions like internal/kafka's producer (the Java
// client's murmur2 of the key; round robin for a nil key).
//
// Send fails fast once the transaction has failed (a record was rejected,
// the producer was fenced), with the classified error Commit would return.
// If ctx ends before sarama takes r, r is not sent and the transaction
// stays usable.
func (s *saramaSession) Send(ctx context.Context, r kafka.Record) error {
	return s.send(r, func(p *producer, end *txnEnd) error {
		select {
		case <-end.ch:
			return ErrNoTransaction
		default:
		}
		msg := kafka.MessageFromRecord(r)
		if s.linger != nil && s.linger.Add(msg, func(m *sarama.ProducerMessage) error { return input(ctx, p, end.ch, m) }) {
			// What a full linger does not hand over before ctx is done or
			// the transaction ends stays held: Commit hands it over.
			return nil
		}
		if err := input(ctx, p, end.ch, msg); err != nil {
			if errors.Is(err, ErrNoTransaction) {
				return err
			}
			return fmt.Errorf("exactlyonce: send to %q: %w", r.Topic, err)
		}
		return nil
	})
}

// input hands m to p's sarama input for the transaction that ends when end
// closes, blocking while the buffer is full until ctx is done or end
// closes (a nil end never does). The records handed over are what Commit
// waits for.
func input(ctx context.Context, p *producer, end <-chan struct{}, m *sarama.ProducerMessage) error {
	p.t.add()
	if err := kafka.Input(ctx, p.ap.Input(), m, end, ErrNoTransaction); err != nil {
		p.t.done(nil)
		return err
	}
	return nil
}

// tick ends a window of the linger: it hands what is held to the open
// transaction. Once the transaction is ending, Commit hands it over.
func (s *saramaSession) tick() {
	s.mu.RLock()
	defer s.mu.RUnlock()
	send := func(*sarama.ProducerMessage) error { return ErrNoTransaction }
	if s.state == stOpen {
		p, end := s.p, s.end.ch
		send = func(m *sarama.ProducerMessage) error { return input(context.Background(), p, end, m) }
	}
	_ = s.linger.Tick(send)
}

// dropHeld discards the records the linger holds for a transaction that
// aborted or was abandoned.
func (s *saramaSession) dropHeld() {
	if s.linger != nil {
		s.linger.Drop()
	}
}

// Commit commits the open transaction with the consumer offsets of its
// input: offsets maps each input partition to the offset of the next
// record to read (last processed + 1), gm is the consuming member's group
// metadata read now (KIP-447: the broker rejects offsets of a member whose
// generation is over). Offsets are committed even if the transaction
// produced no record — an epoch or batch whose records were all filtered
// out still moves its input forward.
//
// Commit waits for every record sent, then has sarama send
// AddOffsetsToTxn and TxnOffsetCommit (when offsets is not empty) and
// EndTxn(commit). Coordinator errors (NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
// CONCURRENT_TRANSACTIONS) are retried, by sarama and then by Commit until
// ctx ends. Any other failure is an [*Error] of kind ErrAbortable, ErrFenced,
// ErrIndefinite or ErrFatal. If ctx ends while a request is out, Commit
// returns ErrIndefinite at once and the request finishes in the background.
//
// Invalid arguments (an empty topic or group id, a negative partition or
// offset) are reported without a kind and leave the transaction open.
func (s *saramaSession) Commit(ctx context.Context, offsets map[TopicPartition]int64, gm kafka.GroupMetadata) error {
	s.op.Lock()
	defer s.op.Unlock()
	req, err := offsetsRequest(offsets, gm)
	if err != nil {
		return err
	}
	p, err := s.startEnding(false)
	if err != nil {
		return err
	}

	// 1. The records held go to sarama (no Send runs once the
	// transaction is ending), then every record sent has its outcome; the
	// first failure fails the transaction.
	if s.linger != nil {
		if err := s.linger.Hand(func(m *sarama.ProducerMessage) error { return input(ctx, p, nil, m) }); err != nil {
			return s.setFailure(stFailed, newError("commit", ErrAbortable, fmt.Errorf("hand over held records: %w", err)))
		}
	}
	if err := s.waitRecords(ctx, p, nil, nil); err != nil {
		return err
	}

	// 2. The offsets, with the member's metadata. sarama only records them
	// here; CommitTxn sends AddOffsetsToTxn and TxnOffsetCommit.
	if len(offsets) > 0 {
		if err := p.ap.AddOffsetsToTxnWithGroupMetadata(req, groupMetadata(gm)); err != nil {
			return s.fail("commit", deliveryKind(err, p.status()), err)
		}
	}

	// 3. Commit, retrying what the broker answered as retriable.
	mark := s.watch.count()
	for attempt := 0; ; attempt++ {
		_, cs, err := do(ctx, &p.calls, func() (struct{}, error) { return struct{}{}, p.ap.CommitTxn() }, nil)
		switch cs {
		case notStarted: // every earlier attempt was answered: not committed
			return s.setFailure(stFailed, newError("commit", ErrAbortable, err))
		case abandoned:
			return s.setFailure(stBroken, newError("commit", ErrIndefinite, err))
		}
		if err == nil {
			s.finish()
			return nil
		}
		kind := classify(err, p.status(), s.watch.count() != mark)
		if kind != errTransient {
			return s.fail("commit", kind, err)
		}
		s.log.Warn("exactlyonce: commit, retrying", "attempt", attempt+1, "err", err)
		if perr := kafka.Pause(ctx, kafka.Backoff(attempt)); perr != nil {
			return s.setFailure(stFailed, newError("commit", ErrAbortable, fmt.Errorf("%w (after %w)", perr, err)))
		}
	}
}

// Abort aborts the open transaction: none of its records become visible
// to read_committed consumers and its offsets are not committed. With no
// open transaction it does nothing. It retries coordinator errors until
// ctx ends.
//
// If ctx ends before the abort is sent, Abort returns ctx's error and the
// transaction stays open: call Abort again, or Reset. Any other failure
// (an [*Error]) leaves the session needing Reset.
func (s *saramaSession) Abort(ctx context.Context) error {
	s.op.Lock()
	defer s.op.Unlock()
	p, err := s.startEnding(true)
	if err != nil || p == nil {
		return err
	}
	s.dropHeld()
	return s.abort(ctx, p, p.ap.AbortTxn,
		func(err error, ioFailed bool) error { return classify(err, p.status(), ioFailed) })
}

// Close releases the producer and its connections and waits for every
// goroutine of the session; the records the linger holds are dropped.
func (s *saramaSession) Close() error {
	return s.close(func() {
		if s.linger != nil {
			s.linger.Stop()
			s.linger.Drop()
		}
	})
}

func (p *producer) records() *tracker { return &p.t }
func (p *producer) blocking() *calls  { return &p.calls }
func (p *producer) bumpsEpoch() bool  { return false }
func (p *producer) ended()            { p.t.reset() }
func (p *producer) attrs() []any      { return []any{"status", p.status().String()} }

// needsInit: sarama begins a transaction only in its ready state.
func (p *producer) needsInit() bool { return p.status()&sarama.ProducerTxnFlagReady == 0 }

// begin opens a transaction in sarama, with no failure of an earlier one.
func (p *producer) begin() error {
	if err := p.ap.BeginTxn(); err != nil {
		return err
	}
	p.t.reset()
	return nil
}

func (p *producer) kind(err error, ioFailed bool) error { return classify(err, p.status(), ioFailed) }
func (p *producer) deliveryKind(err error) error        { return deliveryKind(err, p.status()) }

// deliveryKind classifies a failed record or a refused AddOffsetsToTxn:
// nothing of the commit was sent, so a retriable error (given up on after
// sarama's retries) only makes the transaction abortable.
func deliveryKind(err error, status sarama.ProducerTxnStatusFlag) error {
	kind := classify(err, status, false)
	if kind == errTransient {
		kind = ErrAbortable
	}
	return kind
}

// offsetsRequest validates the arguments of Commit and converts the
// offsets for sarama.
func offsetsRequest(offsets map[TopicPartition]int64, gm kafka.GroupMetadata) (map[string][]*sarama.PartitionOffsetMetadata, error) {
	tps, err := commitPartitions(offsets, gm)
	if err != nil || tps == nil {
		return nil, err
	}
	req := make(map[string][]*sarama.PartitionOffsetMetadata)
	for _, tp := range tps {
		req[tp.Topic] = append(req[tp.Topic], &sarama.PartitionOffsetMetadata{
			Partition:   tp.Partition,
			Offset:      offsets[tp],
			LeaderEpoch: -1, // unknown: consumers skip epoch validation
		})
	}
	return req, nil
}

// groupMetadata converts weir's group metadata for sarama.
func groupMetadata(gm kafka.GroupMetadata) *sarama.ConsumerGroupMetadata {
	m := &sarama.ConsumerGroupMetadata{
		GroupID:      gm.GroupID,
		GenerationID: gm.GenerationID,
		MemberID:     gm.MemberID,
	}
	if gm.InstanceID != "" {
		id := gm.InstanceID
		m.GroupInstanceID = &id
	}
	return m
}
