package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

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

// txnEnd is closed when the open transaction starts to end, waking every
// Send blocked on the client's input.
type txnEnd struct {
	ch   chan struct{}
	once sync.Once
}

func (e *txnEnd) close() { e.once.Do(func() { close(e.ch) }) }

// clientProducer is one transactional producer of a client library (one
// producer id epoch lineage), as core drives it: *producer on sarama,
// *franzProducer on franz-go.
type clientProducer interface {
	comparable
	// records is the tracker of the open transaction's records.
	records() *tracker
	// begin opens a transaction in the client.
	begin() error
	// needsInit reports that the client will not begin a transaction on
	// this producer without a new InitProducerId.
	needsInit() bool
	// kind classifies err, a failure of an operation during which a
	// connection failed if ioFailed.
	kind(err error, ioFailed bool) error
	// deliveryKind classifies a failed record or offsets request: nothing
	// of the commit was sent, so a retriable error only makes the
	// transaction abortable.
	deliveryKind(err error) error
	// bumpsEpoch reports that every EndTxn bumps the producer epoch
	// (transactions v2), which fences a delayed copy of a request.
	bumpsEpoch() bool
	// ended is told that the transaction committed or aborted.
	ended()
	// blocking runs the producer's blocking calls; close joins them.
	blocking() *calls
	// attrs are what a log line of the producer's initialization says.
	attrs() []any
	close()
}

// core is the state machine of a Session, the same on both client
// libraries: the states, the locking, the producer's (re-)initialization,
// Begin, the checks of Send, the abort loop and Close. Each library's
// session embeds it and adds Send's hand-over and Commit.
//
// op serializes Begin, Commit, Abort, Reset and Close. mu guards the
// fields below it; Send holds it shared. They are written with op held
// too, so op's holder may read them without mu.
type core[P clientProducer] struct {
	cfg   Config // with defaults
	log   *slog.Logger
	watch *connWatch // counts failed connections
	bg    calls      // producer opens, and closes of replaced producers

	// open creates a producer and initializes its id (InitProducerId).
	open func(ctx context.Context) (P, error)
	// initKind classifies a failed open.
	initKind func(err error) error
	// onReset runs first in every reset (nil: nothing to do).
	onReset func()

	op sync.Mutex

	mu      sync.RWMutex
	state   state
	p       P       // the zero P until an init succeeds
	end     *txnEnd // the open transaction's end signal
	failure error   // why the session is stFailed or stBroken
	reinit  bool    // re-initialize the producer before the next Begin
	ioMark  uint64  // watch count at Begin

	inits atomic.Int64 // producers initialized, for tests and logs
	// acked are the offsets of the records acknowledged, by every
	// producer of the session, for the topics tracked.
	acked kafka.AckedOffsets
}

// init sets the fields every session starts with and initializes the
// producer: InitProducerId bumps the transactional id's epoch, which
// fences every older producer with the same id and aborts (or, if it was
// committing, completes) the transaction it left open. Coordinator errors
// are retried until ctx ends. On an error the session is closed.
func (s *core[P]) init(ctx context.Context, cfg Config, log *slog.Logger) error {
	s.cfg, s.log, s.watch = cfg, log, newConnWatch()
	s.state, s.failure = stBroken, errors.New("exactlyonce: not initialized")
	s.op.Lock()
	err := s.reset(ctx)
	s.op.Unlock()
	return err
}

func (s *core[P]) Acked() *kafka.AckedOffsets { return &s.acked }

func (s *core[P]) stats() (inits int64, connFailures uint64) {
	return s.inits.Load(), s.watch.count()
}

func (s *core[P]) Reset(ctx context.Context) error {
	s.op.Lock()
	defer s.op.Unlock()
	if s.getState() == stClosed {
		return ErrClosed
	}
	return s.reset(ctx)
}

// reset is Reset with s.op held: the old producer closes in the
// background (the new epoch fences it), a new one sends InitProducerId,
// retried until ctx ends unless the error is fatal.
func (s *core[P]) reset(ctx context.Context) error {
	var zero P
	if s.end != nil {
		s.end.close()
	}
	if s.onReset != nil {
		s.onReset()
	}
	s.mu.Lock()
	old := s.p
	s.p, s.state = zero, stBroken
	s.mu.Unlock()
	if old != zero {
		s.bg.wg.Go(old.close)
	}
	for attempt := 0; ; attempt++ {
		p, cs, err := do(ctx, &s.bg, func() (P, error) { return s.open(ctx) },
			func(p P, _ error) {
				if p != zero {
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
			s.log.Debug("exactlyonce: producer initialized", append([]any{"inits", s.inits.Load()}, p.attrs()...)...)
			return nil
		}
		if s.initKind(err) == ErrFatal {
			if kafka.AuthorizationFailed(err) {
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

func (s *core[P]) Begin(ctx context.Context) error {
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
	if reinit || p.needsInit() {
		s.log.Info("exactlyonce: re-initializing the producer before the next transaction",
			append([]any{"after_connection_failure", reinit}, p.attrs()...)...)
		if err := s.reset(ctx); err != nil {
			return err
		}
		p = s.p
	}
	if err := p.begin(); err != nil {
		kind := p.kind(err, false)
		if kind == errTransient || kind == ErrAbortable {
			kind = ErrIndefinite
		}
		return s.setFailure(stBroken, newError("begin", kind, err))
	}
	s.mu.Lock()
	s.state = stOpen
	s.end = &txnEnd{ch: make(chan struct{})}
	s.ioMark = s.watch.count()
	s.mu.Unlock()
	return nil
}

// send checks that r may join the open transaction and, holding mu
// shared (so the transaction cannot start to end), calls hand with the
// producer and the transaction's end.
func (s *core[P]) send(r kafka.Record, hand func(p P, end *txnEnd) error) error {
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
	if err := s.p.records().err(); err != nil {
		return newError("send", s.p.deliveryKind(err), err)
	}
	return hand(s.p, s.end)
}

// waitRecords waits until every record of the ending transaction has its
// outcome (or ctx ends, or unsettled fires: nil never does); the first
// failure fails the transaction.
func (s *core[P]) waitRecords(ctx context.Context, p P, unsettled <-chan time.Time, unsettledErr func() error) error {
	select {
	case <-p.records().idle():
	case <-unsettled:
		return s.setFailure(stBroken, newError("commit", ErrIndefinite, unsettledErr()))
	case <-ctx.Done():
		return s.setFailure(stFailed, newError("commit", ErrAbortable, fmt.Errorf("wait for records: %w", ctx.Err())))
	}
	if err := p.records().err(); err != nil {
		return s.fail("commit", p.deliveryKind(err), err)
	}
	return nil
}

// abort aborts the ending transaction through endTxn, retrying what
// kindOf classifies as transient until ctx ends. If ctx ends before the
// abort is sent the transaction stays as it was (stFailed): Abort may be
// called again.
func (s *core[P]) abort(ctx context.Context, p P, endTxn func() error, kindOf func(err error, ioFailed bool) error) error {
	mark := s.watch.count()
	for attempt := 0; ; attempt++ {
		_, cs, err := do(ctx, p.blocking(), func() (struct{}, error) { return struct{}{}, endTxn() }, nil)
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
			// The client waited for every record it was handed (no Send
			// ran since startEnding); the last outcome may still be on its
			// way, and must not leak into the next transaction.
			<-p.records().idle()
			s.finish()
			return nil
		}
		kind := kindOf(err, s.watch.count() != mark)
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

// close is Close after beforeClose (nil: nothing), which runs with op
// held.
func (s *core[P]) close(beforeClose func()) error {
	var zero P
	s.op.Lock()
	defer s.op.Unlock()
	if s.end != nil {
		s.end.close()
	}
	if beforeClose != nil {
		beforeClose()
	}
	s.mu.Lock()
	if s.state == stClosed {
		s.mu.Unlock()
		return nil
	}
	p := s.p
	s.p, s.state, s.failure = zero, stClosed, ErrClosed
	s.mu.Unlock()
	if p != zero {
		p.close()
	}
	s.bg.wait()
	return nil
}

// startEnding moves an open (or, for an abort, failed) transaction to
// stEnding and wakes blocked Sends. For an abort with no transaction it
// returns the zero P.
func (s *core[P]) startEnding(abort bool) (P, error) {
	var zero P
	s.mu.RLock()
	st, failure, p := s.state, s.failure, s.p
	s.mu.RUnlock()
	switch st {
	case stOpen:
	case stFailed:
		if !abort {
			return zero, failure
		}
	case stBroken:
		return zero, failure
	case stClosed:
		return zero, ErrClosed
	default:
		if abort {
			return zero, nil
		}
		return zero, ErrNoTransaction
	}
	s.end.close()
	s.mu.Lock() // waits for the Sends in progress
	s.state = stEnding
	s.mu.Unlock()
	return p, nil
}

// finish ends a transaction that committed or aborted. Without
// transactions v2 a request of it may still be on the wire after a
// connection failed, and would apply to the next transaction (same epoch):
// the producer is re-initialized first. With v2 every EndTxn bumps the
// epoch, which fences such a copy.
func (s *core[P]) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state, s.failure = stIdle, nil
	s.p.ended()
	if n := s.watch.count(); n != s.ioMark && !s.cfg.noReinit && !s.p.bumpsEpoch() {
		s.log.Warn("exactlyonce: a connection failed during the transaction; the producer is re-initialized before the next one",
			"failures", n-s.ioMark)
		s.reinit = true
	}
}

// fail records a failed transaction: aborted by the caller next for
// ErrAbortable and ErrFatal, Reset for the others.
func (s *core[P]) fail(op string, kind, cause error) error {
	st := stBroken
	if kind == ErrAbortable || kind == ErrFatal {
		st = stFailed
	}
	return s.setFailure(st, newError(op, kind, cause))
}

// setFailure sets the state and its error and returns the error.
func (s *core[P]) setFailure(st state, err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stClosed {
		s.state, s.failure = st, err
	}
	return err
}

func (s *core[P]) getState() state {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.state
}
