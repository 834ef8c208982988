package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"

	"github.com/IBM/sarama"

	"github.com/weirstream/weir/internal/kafka"
)

// connWatch dials the producer's connections and counts the ones that
// failed while in use: a read or write error (a timeout, a reset, an EOF)
// before the connection was closed on purpose. After such a failure a
// request sent on it may still reach the broker later — sarama retries
// transactional requests on a new connection after a network error, and a
// retry that succeeds hides the first copy. Without KIP-890 (sarama does
// not implement it) a delayed EndTxn or TxnOffsetCommit with the current
// epoch would apply to the *next* transaction (Jepsen's finding). So the
// Session re-initializes the producer — a new epoch fences the old copy —
// before the next transaction whenever this count moved during one.
//
// It is safe for concurrent use.
type connWatch struct {
	dialer   net.Dialer // read-only after newConnWatch
	failures atomic.Uint64
}

func newConnWatch() *connWatch {
	return &connWatch{dialer: net.Dialer{Timeout: sarama.NewConfig().Net.DialTimeout}}
}

// Dial implements sarama's proxy.Dialer.
func (w *connWatch) Dial(network, addr string) (net.Conn, error) {
	c, err := w.dialer.Dial(network, addr)
	if err != nil {
		return nil, err // nothing was sent on it
	}
	return &watchedConn{Conn: c, w: w}, nil
}

// count returns the number of connection failures so far.
func (w *connWatch) count() uint64 { return w.failures.Load() }

type watchedConn struct {
	net.Conn
	w      *connWatch
	closed atomic.Bool
}

func (c *watchedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil && !c.closed.Load() {
		c.w.failures.Add(1)
	}
	return n, err
}

func (c *watchedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if err != nil && !c.closed.Load() {
		c.w.failures.Add(1)
	}
	return n, err
}

func (c *watchedConn) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

// producer is one sarama transactional producer (one producer id epoch
// lineage) with the goroutines that drain its Successes and Errors.
type producer struct {
	log    *slog.Logger
	client sarama.Client
	ap     sarama.AsyncProducer
	t      tracker
	acked  *kafka.AckedOffsets // the session's

	// calls are the blocking sarama calls on this producer (CommitTxn,
	// AbortTxn); close joins them before shutting sarama down, which
	// would panic a call still about to hand its marker to the input.
	calls   calls
	drained sync.WaitGroup
	once    sync.Once
}

// openProducer connects a client and creates the producer, which sends
// InitProducerId: the broker bumps the epoch of the transactional id,
// aborts (or completes, if it was committing) the transaction an older
// producer left open and fences that producer. It blocks; callers run it
// through call.
func openProducer(brokers []string, sc *sarama.Config, log *slog.Logger, acked *kafka.AckedOffsets) (*producer, error) {
	client, err := sarama.NewClient(brokers, sc)
	if err != nil {
		return nil, fmt.Errorf("connect to %v: %w", brokers, err)
	}
	ap, err := sarama.NewAsyncProducerFromClient(client)
	if err != nil {
		_ = client.Close()
		return nil, err
	}
	p := &producer{log: log, client: client, ap: ap, acked: acked}
	p.t.init()
	p.drained.Add(2)
	go p.drainSuccesses()
	go p.drainErrors()
	return p, nil
}

// status returns sarama's transaction status flags.
func (p *producer) status() sarama.ProducerTxnStatusFlag { return p.ap.TxnStatus() }

// close shuts the producer down: sarama fails or finishes what is in
// flight, every outcome is drained, then the client's connections close.
// It does not end an open transaction. If a call was abandoned, the client
// closes first, so that the call's remaining retries fail at once instead
// of waiting out network timeouts. Idempotent.
func (p *producer) close() {
	p.once.Do(func() {
		if p.calls.abandoned.Load() {
			_ = p.client.Close()
		}
		p.calls.wait()
		p.ap.AsyncClose()
		p.drained.Wait()
		if err := p.client.Close(); err != nil && !errors.Is(err, sarama.ErrClosedClient) {
			p.log.Debug("exactlyonce: close client", "err", err)
		}
	})
}

func (p *producer) drainSuccesses() {
	defer p.drained.Done()
	for msg := range p.ap.Successes() {
		p.acked.Note(msg.Topic, msg.Partition, msg.Offset)
		p.t.done(nil)
	}
}

// drainErrors records every failed record; none is dropped: the first
// fails the transaction, the others are counted and logged.
func (p *producer) drainErrors() {
	defer p.drained.Done()
	for pe := range p.ap.Errors() {
		if pe == nil {
			continue
		}
		var err error = pe.Err
		if pe.Msg != nil {
			err = &kafka.PartitionError{Topic: pe.Msg.Topic, Partition: pe.Msg.Partition, Err: pe.Err}
		}
		if p.t.done(err) {
			p.log.Warn("exactlyonce: record failed; the transaction cannot commit", "err", err)
		} else {
			p.log.Debug("exactlyonce: record failed", "err", err)
		}
	}
}

// tracker counts the records handed to sarama whose outcome has not come
// back, and keeps the first failure of the transaction.
type tracker struct {
	mu       sync.Mutex
	n        int
	idleCh   chan struct{} // closed while n == 0
	firstErr error
	moreErrs int
}

func (t *tracker) init() {
	t.idleCh = make(chan struct{})
	close(t.idleCh)
}

// add registers a record about to be sent.
func (t *tracker) add() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		t.idleCh = make(chan struct{})
	}
	t.n++
}

// done records the outcome of a record (nil: delivered, or not sent). It
// reports whether err is the transaction's first failure.
func (t *tracker) done(err error) (first bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		if t.firstErr == nil {
			t.firstErr, first = err, true
		} else {
			t.moreErrs++
		}
	}
	if t.n == 0 {
		return first // cannot happen: every done has its add
	}
	t.n--
	if t.n == 0 {
		close(t.idleCh)
	}
	return first
}

// idle returns a channel closed once every record added so far has its
// outcome.
func (t *tracker) idle() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.idleCh
}

// err returns the first failure of the transaction, nil if none.
func (t *tracker) err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.firstErr != nil && t.moreErrs > 0 {
		return fmt.Errorf("%w (and %d more failed records)", t.firstErr, t.moreErrs)
	}
	return t.firstErr
}

// reset forgets the failures, for the next transaction.
func (t *tracker) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.firstErr, t.moreErrs = nil, 0
}

// calls runs blocking sarama calls (which take no context) on goroutines
// of their own, so that a caller's ctx bounds its wait. A call whose
// caller gave up runs on; wait joins them all. It is safe for concurrent
// use.
type calls struct {
	wg        sync.WaitGroup
	abandoned atomic.Bool // some call outlived its caller
}

// callState says how far a call got.
type callState int

const (
	finished   callState = iota // fn returned; its result is valid
	notStarted                  // ctx had ended: fn never ran
	abandoned                   // ctx ended first: fn runs on
)

// do runs fn and returns its result, or ctx's error if ctx ends first.
// An abandoned fn keeps running; cleanup, if not nil, receives its result
// once it returns.
func do[T any](ctx context.Context, c *calls, fn func() (T, error), cleanup func(T, error)) (T, callState, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, notStarted, err
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	c.wg.Go(func() {
		v, err := fn()
		ch <- result{v, err}
	})
	select {
	case r := <-ch:
		return r.v, finished, r.err
	case <-ctx.Done():
		c.abandoned.Store(true)
		if cleanup != nil {
			c.wg.Go(func() {
				r := <-ch
				cleanup(r.v, r.err)
			})
		}
		return zero, abandoned, ctx.Err()
	}
}

// wait joins every call, abandoned or not.
func (c *calls) wait() { c.wg.Wait() }
