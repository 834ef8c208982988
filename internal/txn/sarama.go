package txn

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/IBM/sarama"

	"github.com/weirstream/weir/internal/kafka"
)

// state is where a Session is in its life.
type state int

const (
	stIdle   state = iota // no transaction: Begin
	stOpen                // a transaction is open: Send, Commit, Abort
	stEnding              // Commit or Abort is running
	stFailed              // the open transaction failed: Abort
	stBroken              // the producer must be re-initialized: Reset
	stClosed
)

// saramaSession is the Session on sarama's transactional AsyncProducer:
// one transactional id, one transaction at a time.
//
// Begin, Commit, Abort, Reset and Close are meant for one goroutine at a
// time and are serialized if called concurrently (Close waits for a
// running Commit). Send may be called from many goroutines at once between
// Begin and Commit or Abort; a Send racing with Commit either joins the
// transaction or fails with ErrNoTransaction.
type saramaSession struct {
	cfg   Config // with defaults
	log   *slog.Logger
	watch *connWatch
	bg    calls // producer opens, and closes of replaced producers
	// linger is the adaptive linger (kafka.AdaptiveLinger): records of the
	// open transaction held while Sends come fast, handed to sarama every
	// 5 ms and at once by Commit. nil when the configuration sets a
	// linger, which sarama applies itself (and Commit waits out).
	linger *kafka.AdaptiveLinger

	op sync.Mutex // serializes Begin, Commit, Abort, Reset and Close

	// mu guards the fields below; Send holds it shared. They are written
	// with op held too, so op's holder may read them without mu.
	mu      sync.RWMutex
	state   state
	p       *producer // nil until an init succeeds
	end     *txnEnd   // the open transaction's end signal
	failure error     // why the session is stFailed or stBroken
	reinit  bool      // re-initialize the producer before the next Begin
	ioMark  uint64    // watch count at Begin

	inits atomic.Int64 // producers initialized, for tests and logs
	// acked are the offsets of the records acknowledged, by every
	// producer of the session, for the topics tracked.
	acked kafka.AckedOffsets
}

// txnEnd is closed when the open transaction starts to end, waking every
// Send blocked on sarama's input.
type txnEnd struct {
	ch   chan struct{}
	once sync.Once
}

func (e *txnEnd) close() { e.once.Do(func() { close(e.ch) }) }

// newSarama initializes the producer (cfg is valid, with defaults): InitProducerId bumps
// the transactional id's epoch, which fences every older producer with the
// same id and aborts (or, if it was committing, completes) the transaction
// it left open. Coordinator errors are retried until ctx ends.
func newSarama(ctx context.Context, cfg Config) (*saramaSession, error) {
	s := &saramaSession{
		cfg:     cfg,
		log:     cfg.Logger.With("transactional_id", cfg.TransactionalID),
		watch:   newConnWatch(),
		state:   stBroken,
		failure: errors.New("exactlyonce: not initialized"),
	}
	if cfg.Kafka.Tuning.Linger == 0 {
		s.linger = kafka.NewAdaptiveLinger(s.tick)
	}
	s.op.Lock()
	err := s.reset(ctx)
	s.op.Unlock()
	if err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

func (s *saramaSession) Acked() *kafka.AckedOffsets { return &s.acked }

func (s *saramaSession) stats() (inits int64, connFailures uint64) {
	return s.inits.Load(), s.watch.count()
}

// Reset discards the producer and initializes a new one with the same
// transactional id, as New does: the new epoch completes or aborts whatever
// the old producer left in flight and fences its requests still on the
// wire. When Reset returns nil the outcome of every earlier transaction is
// decided, so stable offsets read afterwards (OffsetFetch with
// RequireStable) tell whether it committed. An open transaction is
// abandoned (the broker aborts it).
//
// Call it after ErrIndefinite or ErrFenced, or after a failed Abort; Begin
// calls it by itself when the previous transaction saw a connection fail.
// If ctx ends first Reset returns an ErrIndefinite error and may be called
// again.
func (s *saramaSession) Reset(ctx context.Context) error {
	s.op.Lock()
	defer s.op.Unlock()
	if s.getState() == stClosed {
		return ErrClosed
	}
	return s.reset(ctx)
}

// reset is Reset with s.op held.
func (s *saramaSession) reset(ctx context.Context) error {
	if s.end != nil {
		s.end.close()
	}
	s.dropHeld() // the open transaction is abandoned
	s.mu.Lock()
	old := s.p
	s.p, s.state = nil, stBroken
	s.mu.Unlock()
	if old != nil {
		// The old producer shuts down on its own; the new epoch fences it.
		s.bg.wg.Go(old.close)
	}
	for attempt := 0; ; attempt++ {
		p, cs, err := do(ctx, &s.bg,
			func() (*producer, error) {
				sc, err := s.cfg.saramaConfig(s.watch)
				if err != nil {
					return nil, err
				}
				return openProducer(s.cfg.Kafka.Brokers, sc, s.log, &s.acked)
			},
			func(p *producer, _ error) {
				if p != nil {
					p.close()
				}
			})
		if cs != finished {
			return s.setFailure(stBroken, newError("init", ErrIndefinite, err))
		}
		if err == nil {
			s.inits.Add(1)
			s.mu.Lock()
			s.p, s.state, s.failure, s.reinit = p, stIdle, nil, false
			s.mu.Unlock()
			s.log.Debug("exactlyonce: producer initialized", "inits", s.inits.Load())
			return nil
		}
		kind := classify(err, 0, false)
		if kind == ErrFatal {
			if errors.Is(err, sarama.ErrTransactionalIDAuthorizationFailed) {
				err = fmt.Errorf("transactional id %q: %w (an ACL granting Write on it is needed)", s.cfg.TransactionalID, err)
			}
			return s.setFailure(stBroken, newError("init", ErrFatal, err))
		}
		// InitProducerId answers CONCURRENT_TRANSACTIONS while the old
		// transaction completes; coordinators move and load; brokers
		// restart. All of it passes.
		s.log.Warn("exactlyonce: init producer, retrying", "attempt", attempt+1, "err", err)
		if perr := kafka.Pause(ctx, kafka.Backoff(attempt)); perr != nil {
			return s.setFailure(stBroken, newError("init", ErrIndefinite, fmt.Errorf("%w (after %w)", perr, err)))
		}
	}
}

// Begin opens a transaction. Before it, if the previous transaction saw a
// connection fail (see the package documentation), it re-initializes the
// producer, bounded by ctx; otherwise it does no I/O.
func (s *saramaSession) Begin(ctx context.Context) error {
	s.op.Lock()
	defer s.op.Unlock()
	s.mu.RLock()
	st, failure, reinit, p := s.state, s.failure, s.reinit, s.p
	s.mu.RUnlock()
	switch st {
	case stClosed:
		return ErrClosed
	case stBroken:
		return failure
	case stOpen, stEnding, stFailed:
		return ErrTransactionOpen
	}
	if reinit || p.status()&sarama.ProducerTxnFlagReady == 0 {
		s.log.Info("exactlyonce: re-initializing the producer before the next transaction",
			"after_connection_failure", reinit, "status", p.status().String())
		if err := s.reset(ctx); err != nil {
			return err
		}
		p = s.p
	}
	if err := p.ap.BeginTxn(); err != nil {
		kind := classify(err, p.status(), false)
		if kind == errTransient || kind == ErrAbortable {
			kind = ErrIndefinite
		}
		return s.setFailure(stBroken, newError("begin", kind, err))
	}
	p.t.reset()
	s.mu.Lock()
	s.state = stOpen
	s.end = &txnEnd{ch: make(chan struct{})}
	s.ioMark = s.watch.count()
	s.mu.Unlock()
	return nil
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
	if r.Topic == "" {
		return fmt.Errorf("exactlyonce: send: record without topic")
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	switch s.state {
	case stOpen:
	case stFailed, stBroken:
		return s.failure
	case stClosed:
		return ErrClosed
	default:
		return ErrNoTransaction
	}
	p, end := s.p, s.end
	if err := p.t.err(); err != nil {
		return newError("send", deliveryKind(err, p.status()), err)
	}
	select {
	case <-end.ch:
		return ErrNoTransaction
	default:
	}
	msg := kafka.MessageFromRecord(r)
	if s.linger != nil && s.linger.Add(msg, func(m *sarama.ProducerMessage) error { return input(ctx, p, end.ch, m) }) {
		// What a full linger does not hand over before ctx is done or the
		// transaction ends stays held: Commit hands it over.
		return nil
	}
	if err := input(ctx, p, end.ch, msg); err != nil {
		if errors.Is(err, ErrNoTransaction) {
			return err
		}
		return fmt.Errorf("exactlyonce: send to %q: %w", r.Topic, err)
	}
	return nil
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
	select {
	case <-p.t.idle():
	case <-ctx.Done():
		return s.setFailure(stFailed, newError("commit", ErrAbortable, fmt.Errorf("wait for records: %w", ctx.Err())))
	}
	if err := p.t.err(); err != nil {
		return s.fail("commit", deliveryKind(err, p.status()), err)
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
	mark := s.watch.count()
	for attempt := 0; ; attempt++ {
		_, cs, err := do(ctx, &p.calls, func() (struct{}, error) { return struct{}{}, p.ap.AbortTxn() }, nil)
		switch cs {
		case notStarted: // the transaction is as it was: Abort may be called again
			s.mu.Lock()
			if s.failure == nil {
				s.failure = newError("abort", ErrAbortable, err)
			}
			s.state = stFailed
			s.mu.Unlock()
			return fmt.Errorf("exactlyonce: abort: %w", err)
		case abandoned:
			return s.setFailure(stBroken, newError("abort", ErrIndefinite, err))
		}
		if err == nil {
			// sarama waited for every record it was handed (no Send ran
			// since startEnding); the last outcome may still be on its way
			// through a drain goroutine, and must not leak into the next
			// transaction.
			<-p.t.idle()
			s.finish()
			return nil
		}
		kind := classify(err, p.status(), s.watch.count() != mark)
		switch kind {
		case errTransient:
			s.log.Warn("exactlyonce: abort, retrying", "attempt", attempt+1, "err", err)
			if perr := kafka.Pause(ctx, kafka.Backoff(attempt)); perr != nil {
				return s.setFailure(stBroken, newError("abort", ErrIndefinite, fmt.Errorf("%w (after %w)", perr, err)))
			}
			continue
		case ErrAbortable:
			kind = ErrIndefinite // an abort that failed needs a new epoch
		}
		return s.setFailure(stBroken, newError("abort", kind, err))
	}
}

// Close releases the producer and its connections and waits for every
// goroutine of the session. It does not end an open transaction: the
// broker aborts it when the next Session with the same transactional id
// starts, or at TransactionTimeout (read_committed consumers of its
// partitions wait until then) — Abort first for a clean stop. Close may
// wait as long as sarama's network timeouts when a broker is unreachable.
// It is idempotent and returns nil; the error is there for io.Closer.
func (s *saramaSession) Close() error {
	s.op.Lock()
	defer s.op.Unlock()
	if s.end != nil {
		s.end.close()
	}
	if s.linger != nil {
		s.linger.Stop()
		s.linger.Drop()
	}
	s.mu.Lock()
	if s.state == stClosed {
		s.mu.Unlock()
		return nil
	}
	p := s.p
	s.p, s.state, s.failure = nil, stClosed, ErrClosed
	s.mu.Unlock()
	if p != nil {
		p.close()
	}
	s.bg.wait()
	return nil
}

// startEnding moves an open (or, for an abort, failed) transaction to
// stEnding and wakes blocked Sends. For an abort with no transaction it
// returns a nil producer.
func (s *saramaSession) startEnding(abort bool) (*producer, error) {
	s.mu.RLock()
	st, failure, p := s.state, s.failure, s.p
	s.mu.RUnlock()
	switch st {
	case stOpen:
	case stFailed:
		if !abort {
			return nil, failure
		}
	case stBroken:
		return nil, failure
	case stClosed:
		return nil, ErrClosed
	default:
		if abort {
			return nil, nil
		}
		return nil, ErrNoTransaction
	}
	s.end.close()
	s.mu.Lock() // waits for the Sends in progress
	s.state = stEnding
	s.mu.Unlock()
	return p, nil
}

// finish ends a transaction that committed or aborted.
func (s *saramaSession) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state, s.failure = stIdle, nil
	s.p.t.reset()
	if n := s.watch.count(); n != s.ioMark && !s.cfg.noReinit {
		// A request of this transaction may still be on the wire.
		s.log.Warn("exactlyonce: a connection failed during the transaction; the producer is re-initialized before the next one",
			"failures", n-s.ioMark)
		s.reinit = true
	}
}

// fail records a failed transaction: aborted by the caller next for
// ErrAbortable and ErrFatal, Reset for the others.
func (s *saramaSession) fail(op string, kind, cause error) error {
	st := stBroken
	if kind == ErrAbortable || kind == ErrFatal {
		st = stFailed
	}
	return s.setFailure(st, newError(op, kind, cause))
}

// setFailure sets the state and its error and returns the error.
func (s *saramaSession) setFailure(st state, err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stClosed {
		s.state, s.failure = st, err
	}
	return err
}

func (s *saramaSession) getState() state {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.state
}

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
	if len(offsets) == 0 {
		return nil, nil
	}
	if gm.GroupID == "" {
		return nil, fmt.Errorf("exactlyonce: commit: offsets without a group id")
	}
	tps := make([]TopicPartition, 0, len(offsets))
	for tp, off := range offsets {
		if tp.Topic == "" || tp.Partition < 0 || off < 0 {
			return nil, fmt.Errorf("exactlyonce: commit: invalid offset %d for partition %q/%d", off, tp.Topic, tp.Partition)
		}
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, func(a, b TopicPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
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
