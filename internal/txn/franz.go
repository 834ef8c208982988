package txn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/kafka"
)

// franzSession is the Session on franz-go (kgo): one kgo.Client with the
// transactional id produces the records; the consumer offsets go into the
// transaction through weir's own requests (franz-go offers that only to a
// kgo consumer group, and weir's group is its own), see franzproducer.go.
// Its states and locking are core's.
type franzSession struct {
	core[*franzProducer]
}

// newFranz initializes the producer (cfg is valid, with defaults).
func newFranz(ctx context.Context, cfg Config) (*franzSession, error) {
	s := &franzSession{}
	s.open = func(ctx context.Context) (*franzProducer, error) {
		return openFranz(ctx, s.cfg, s.watch, s.log, &s.acked)
	}
	s.initKind = func(err error) error { return classifyFranz(err, false) }
	log := cfg.Logger.With("transactional_id", cfg.TransactionalID, "client", kafka.ClientFranz)
	if err := s.init(ctx, cfg, log); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

func (s *franzSession) Send(ctx context.Context, r kafka.Record) error {
	return s.send(r, func(p *franzProducer, _ *txnEnd) error {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("exactlyonce: send to %q: %w", r.Topic, err)
		}
		p.produce(r)
		return nil
	})
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
	if err := s.waitRecords(ctx, p, unsettled.C, func() error { return fmt.Errorf("%w after %v", errUnsettled, wait) }); err != nil {
		return err
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
	// A failed franz-go abort is classified by its error alone: the
	// connections that failed meanwhile are not consulted.
	return s.abort(ctx, p, func() error { return p.end(ctx, false) },
		func(err error, _ bool) error { return classifyFranz(err, false) })
}

func (s *franzSession) Close() error { return s.close(nil) }

func (p *franzProducer) records() *tracker { return &p.t }
func (p *franzProducer) blocking() *calls  { return &p.calls }
func (p *franzProducer) needsInit() bool   { return false }
func (p *franzProducer) bumpsEpoch() bool  { return p.v2 }
func (p *franzProducer) ended()            {}
func (p *franzProducer) attrs() []any      { return []any{"transactions_v2", p.v2} }

func (p *franzProducer) kind(err error, ioFailed bool) error { return classifyFranz(err, ioFailed) }
func (p *franzProducer) deliveryKind(err error) error        { return deliveryKindFranz(err) }
