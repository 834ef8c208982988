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

// franzSession is the Session on franz-go (kgo): one kgo.Client with the
// transactional id produces the records; the consumer offsets go into the
// transaction through weir's own requests (franz-go offers that only to a
// kgo consumer group, and weir's group is its own), see franzproducer.go.
//
// Its states and locking are the sarama Session's: op serializes Begin,
// Commit, Abort, Reset and Close; mu, held shared by Send, guards the
// fields below it.
type franzSession struct {
	cfg   Config // with defaults
	log   *slog.Logger
	watch *connWatch // counts failed connections (through kgo's hooks)
	bg    calls      // closes of replaced producers

	op sync.Mutex

	mu      sync.RWMutex
	state   state
	p       *franzProducer // nil until an init succeeds
	end     *txnEnd
	failure error
	reinit  bool   // re-initialize the producer before the next Begin
	ioMark  uint64 // watch count at Begin

	inits atomic.Int64
	acked kafka.AckedOffsets
}

// newFranz initializes the producer (cfg is valid, with defaults).
func newFranz(ctx context.Context, cfg Config) (*franzSession, error) {
	s := &franzSession{
		cfg:     cfg,
		log:     cfg.Logger.With("transactional_id", cfg.TransactionalID, "client", kafka.ClientFranz),
		watch:   newConnWatch(),
		state:   stBroken,
		failure: errors.New("exactlyonce: not initialized"),
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

func (s *franzSession) Acked() *kafka.AckedOffsets { return &s.acked }

func (s *franzSession) stats() (int64, uint64) { return s.inits.Load(), s.watch.count() }

func (s *franzSession) Reset(ctx context.Context) error {
	s.op.Lock()
	defer s.op.Unlock()
	if s.getState() == stClosed {
		return ErrClosed
	}
	return s.reset(ctx)
}

// reset is Reset with s.op held: the old producer closes in the
// background, a new one sends InitProducerId, retried until ctx ends
// unless the error is fatal.
func (s *franzSession) reset(ctx context.Context) error {
	if s.end != nil {
		s.end.close()
	}
	s.mu.Lock()
	old := s.p
	s.p, s.state = nil, stBroken
	s.mu.Unlock()
	if old != nil {
		s.bg.wg.Go(old.close)
	}
	for attempt := 0; ; attempt++ {
		p, cs, err := do(ctx, &s.bg,
			func() (*franzProducer, error) { return openFranz(ctx, s.cfg, s.watch, s.log, &s.acked) },
			func(p *franzProducer, _ error) {
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
			s.log.Debug("exactlyonce: producer initialized", "inits", s.inits.Load(), "transactions_v2", p.v2)
			return nil
		}
		kind := classifyFranz(err, false)
		if kind == ErrFatal {
			if kafka.AuthorizationFailed(err) {
				err = fmt.Errorf("transactional id %q: %w (an ACL granting Write on it is needed)", s.cfg.TransactionalID, err)
			}
			return s.setFailure(stBroken, newError("init", ErrFatal, err))
		}
		s.log.Warn("exactlyonce: init producer, retrying", "attempt", attempt+1, "err", err)
		if perr := kafka.Pause(ctx, kafka.Backoff(attempt)); perr != nil {
			return s.setFailure(stBroken, newError("init", ErrIndefinite, fmt.Errorf("%w (after %w)", perr, err)))
		}
	}
}

func (s *franzSession) Begin(ctx context.Context) error {
	s.op.Lock()
	defer s.op.Unlock()
	s.mu.RLock()
	st, failure, reinit := s.state, s.failure, s.reinit
	s.mu.RUnlock()
	switch st {
	case stClosed:
		return ErrClosed
	case stBroken:
		return failure
	case stOpen, stEnding, stFailed:
		return ErrTransactionOpen
	}
	if reinit {
		s.log.Info("exactlyonce: re-initializing the producer before the next transaction (a connection failed during the last one)")
		if err := s.reset(ctx); err != nil {
			return err
		}
	}
	p := s.p
	if err := p.begin(); err != nil {
		kind := classifyFranz(err, false)
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

func (s *franzSession) Send(ctx context.Context, r kafka.Record) error {
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
	p := s.p
	if err := p.t.err(); err != nil {
		return newError("send", deliveryKindFranz(err), err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("exactlyonce: send to %q: %w", r.Topic, err)
	}
	p.produce(r)
	return nil
}

// Commit: the offsets go out while the records are still in flight
// (franzProducer.sendOffsets); EndTxn follows both.
func (s *franzSession) Commit(ctx context.Context, offsets map[TopicPartition]int64, gm kafka.GroupMetadata) error {
	s.op.Lock()
	defer s.op.Unlock()
	req, err := offsetsOf(offsets, gm)
	if err != nil {
		return err
	}
	p, err := s.startEnding(false)
	if err != nil {
		return err
	}

	// 1. The offsets, overlapping the records' flight.
	var oc *offsetsCall
	if req != nil && !s.cfg.serialOffsets {
		oc = p.sendOffsets(ctx, req)
	}

	// 2. Every record has its outcome; the first failure fails the
	// transaction. kgo never gives up on a record whose produce request
	// went unanswered (it may be written); past the transaction timeout
	// the broker has aborted the transaction anyway, and only a new epoch
	// settles the record (Config.unsettledAfter).
	wait := s.cfg.unsettledAfter()
	unsettled := time.NewTimer(wait)
	defer unsettled.Stop()
	select {
	case <-p.t.idle():
	case <-unsettled.C:
		return s.setFailure(stBroken, newError("commit", ErrIndefinite,
			fmt.Errorf("%w after %v", errUnsettled, wait)))
	case <-ctx.Done():
		return s.setFailure(stFailed, newError("commit", ErrAbortable, fmt.Errorf("wait for records: %w", ctx.Err())))
	}
	if err := p.t.err(); err != nil {
		return s.fail("commit", deliveryKindFranz(err), err)
	}
	if req != nil && oc == nil {
		oc = p.sendOffsets(ctx, req)
	}
	if oc != nil {
		if err := oc.wait(ctx); err != nil {
			return s.offsetsFailed("commit", err)
		}
	}

	// 3. EndTxn.
	mark := s.watch.count()
	_, cs, err := do(ctx, &p.calls, func() (struct{}, error) { return struct{}{}, p.end(ctx, true) }, nil)
	switch cs {
	case notStarted:
		return s.setFailure(stFailed, newError("commit", ErrAbortable, err))
	case abandoned:
		return s.setFailure(stBroken, newError("commit", ErrIndefinite, err))
	}
	if err == nil {
		s.finish()
		return nil
	}
	kind := classifyFranz(err, s.watch.count() != mark)
	if kind == errTransient {
		// kgo retried what it retries and gave up: the coordinator
		// answered, so nothing committed; kgo re-initializes the
		// producer id on the abort.
		kind = ErrAbortable
	}
	return s.fail("commit", kind, err)
}

// offsetsFailed classifies a failed offsets call: an answer without a
// commit (abortable, fenced, fatal), or no answer (indefinite: a copy of
// the request may still land).
func (s *franzSession) offsetsFailed(op string, err error) error {
	var ab *abandonedError
	if errors.As(err, &ab) {
		return s.setFailure(stBroken, newError(op, ErrIndefinite, ab.err))
	}
	return s.fail(op, deliveryKindFranz(err), err)
}

func (s *franzSession) Abort(ctx context.Context) error {
	s.op.Lock()
	defer s.op.Unlock()
	p, err := s.startEnding(true)
	if err != nil || p == nil {
		return err
	}
	if oc := p.pendingOffsets(); oc != nil {
		if err := oc.wait(ctx); err != nil {
			var ab *abandonedError
			if errors.As(err, &ab) {
				return s.setFailure(stBroken, newError("abort", ErrIndefinite, ab.err))
			}
		}
	}
	for attempt := 0; ; attempt++ {
		_, cs, err := do(ctx, &p.calls, func() (struct{}, error) { return struct{}{}, p.end(ctx, false) }, nil)
		switch cs {
		case notStarted:
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
			<-p.t.idle() // the aborted records' outcomes are all in
			s.finish()
			return nil
		}
		kind := classifyFranz(err, false)
		switch kind {
		case errTransient:
			s.log.Warn("exactlyonce: abort, retrying", "attempt", attempt+1, "err", err)
			if perr := kafka.Pause(ctx, kafka.Backoff(attempt)); perr != nil {
				return s.setFailure(stBroken, newError("abort", ErrIndefinite, fmt.Errorf("%w (after %w)", perr, err)))
			}
			continue
		case ErrAbortable:
			kind = ErrIndefinite
		}
		return s.setFailure(stBroken, newError("abort", kind, err))
	}
}

func (s *franzSession) Close() error {
	s.op.Lock()
	defer s.op.Unlock()
	if s.end != nil {
		s.end.close()
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

// startEnding is the sarama Session's (see there).
func (s *franzSession) startEnding(abort bool) (*franzProducer, error) {
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

// finish ends a transaction that committed or aborted. Without
// transactions v2 a request of it may still be on the wire after a
// connection failed, and would apply to the next transaction (same epoch):
// the producer is re-initialized first. With v2 every EndTxn bumps the
// epoch, which fences such a copy.
func (s *franzSession) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state, s.failure = stIdle, nil
	if n := s.watch.count(); n != s.ioMark && !s.cfg.noReinit && !s.p.v2 {
		s.log.Warn("exactlyonce: a connection failed during the transaction; the producer is re-initialized before the next one",
			"failures", n-s.ioMark)
		s.reinit = true
	}
}

func (s *franzSession) fail(op string, kind, cause error) error {
	st := stBroken
	if kind == ErrAbortable || kind == ErrFatal {
		st = stFailed
	}
	return s.setFailure(st, newError(op, kind, cause))
}

func (s *franzSession) setFailure(st state, err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stClosed {
		s.state, s.failure = st, err
	}
	return err
}

func (s *franzSession) getState() state {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.state
}
