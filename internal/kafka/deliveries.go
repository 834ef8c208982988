package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// The delivery bookkeeping of the at-least-once [Producer], the same on
// either client: each record given to the client is registered in a
// deliveries and completed by its acknowledgement or failure, which
// Flush waits for; the records of a SendWait report to an ownDeliveries
// of their own.

// sendGate orders a producer's sends against its Close: a send holds mu
// shared from its check until the client has the record, Close takes it
// exclusively to mark the producer closed, so that no record reaches the
// client once Close began handing it over.
type sendGate struct {
	mu     sync.RWMutex
	closed bool
	// closing closes when Close begins: a send waiting for room in the
	// client gives up.
	closing chan struct{}
}

func newSendGate() sendGate { return sendGate{closing: make(chan struct{})} }

// enter checks a Send of r (checkSend) and holds the gate shared; unless
// it returns an error, the caller calls leave once the client has r.
func (g *sendGate) enter(ctx context.Context, r Record) error {
	if err := checkSend(ctx, r); err != nil {
		return err
	}
	g.mu.RLock()
	if g.closed {
		g.mu.RUnlock()
		return errSendClosed()
	}
	return nil
}

// leave releases what enter held.
func (g *sendGate) leave() { g.mu.RUnlock() }

// shut begins Close: the sends waiting for room give up, and atClose runs
// holding the gate exclusively, after which no send passes. Call it once.
func (g *sendGate) shut(atClose func()) {
	close(g.closing)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	atClose()
}

// checkSend is the check of a Send before the producer takes r: it has a
// topic and ctx is not done.
func checkSend(ctx context.Context, r Record) error {
	if r.Topic == "" {
		return fmt.Errorf("%w: record without topic", ErrConfig)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("kafka: send to %q: %w", r.Topic, err)
	}
	return nil
}

// sendErr is the error of a record not given to the client: the
// producer closed, or the caller's ctx done while the producer was full.
func sendErr(topic string, err error) error {
	if errors.Is(err, ErrClosed) {
		return fmt.Errorf("kafka: send: %w", err)
	}
	return fmt.Errorf("kafka: send to %q: %w", topic, err)
}

// errSendClosed is the error of a send to a closed producer.
func errSendClosed() error { return fmt.Errorf("kafka: send: %w", ErrClosed) }

// sendWait is [Producer.SendWait] on a client whose send gives recs to
// the client as w's.
func sendWait(ctx context.Context, recs []Record, send func(ctx context.Context, w *ownDeliveries, recs []Record) error) error {
	if len(recs) == 0 {
		return nil
	}
	w := &ownDeliveries{left: len(recs), done: make(chan struct{})}
	if err := send(ctx, w, recs); err != nil {
		return err
	}
	select {
	case <-w.done:
		return w.err
	case <-ctx.Done():
		return fmt.Errorf("kafka: send: %w", ctx.Err())
	}
}

// flush is [Producer.Flush] once what the client holds is handed over:
// it waits until every record registered so far is complete and returns
// the first error since the last call, or ctx's error if it is done first.
func (d *deliveries) flush(ctx context.Context) error {
	select {
	case <-d.waitFor():
		return d.takeErr()
	case <-ctx.Done():
		return fmt.Errorf("kafka: flush: %w", ctx.Err())
	}
}

// closeErr is [Producer.Close]'s error: the delivery errors no Flush
// reported, taken after every record is complete.
func (d *deliveries) closeErr() error {
	if err := d.takeErr(); err != nil {
		return fmt.Errorf("kafka: close producer: %w", err)
	}
	return nil
}

// ownDeliveries collects the outcomes of one SendWait's records.
type ownDeliveries struct {
	mu   sync.Mutex
	left int
	err  error
	done chan struct{}
}

func (w *ownDeliveries) complete(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil && w.err == nil {
		w.err = err
	}
	if w.left--; w.left == 0 {
		close(w.done)
	}
}

// deliveries tracks records by sequence number. Sequence numbers start at
// 1 (0 marks a message without one); every one below base is complete.
// Acknowledgements of different partitions arrive out of order, so the
// completed ones at or above base wait in done until base reaches them.
type deliveries struct {
	// next is the sequence number of the next record: an atomic, so that
	// a send takes no lock (register).
	next atomic.Uint64
	mu   sync.Mutex
	base uint64 // every record below base is complete
	// done[i] reports whether record base+i is complete: a window over the
	// records in flight, trimmed at the front as base advances (a map of
	// sequence numbers cost 5 % of a stateless application's CPU, most of
	// it probing past the tombstones of deleted keys).
	done    []bool
	waiters []waiter

	firstErr error
	moreErrs int
}

type waiter struct {
	target uint64 // satisfied once base >= target
	ch     chan struct{}
}

func (d *deliveries) init() {
	d.next.Store(1)
	d.base = 1
}

func (d *deliveries) register() uint64 { return d.next.Add(1) - 1 }

// complete records the outcome of record seq.
func (d *deliveries) complete(seq uint64, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		if d.firstErr == nil {
			d.firstErr = err
		} else {
			d.moreErrs++
		}
	}
	if seq == 0 || seq < d.base || seq >= d.next.Load() {
		return
	}
	i := int(seq - d.base)
	for len(d.done) <= i {
		d.done = append(d.done, false)
	}
	d.done[i] = true
	n := 0
	for n < len(d.done) && d.done[n] {
		n++
	}
	if n == 0 {
		return
	}
	d.base += uint64(n)
	if n == len(d.done) {
		d.done = d.done[:0] // reuse the array: the window is empty
	} else {
		d.done = d.done[n:]
	}
	kept := d.waiters[:0]
	for _, w := range d.waiters {
		if d.base >= w.target {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	clear(d.waiters[len(kept):])
	d.waiters = kept
}

// waitFor returns a channel closed once every record registered so far is
// complete.
func (d *deliveries) waitFor() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	ch := make(chan struct{})
	next := d.next.Load()
	if d.base >= next {
		close(ch)
		return ch
	}
	d.waiters = append(d.waiters, waiter{target: next, ch: ch})
	return ch
}

// takeErr returns and clears the first error recorded since the last call.
func (d *deliveries) takeErr() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	err, more := d.firstErr, d.moreErrs
	d.firstErr, d.moreErrs = nil, 0
	if err != nil && more > 0 {
		return fmt.Errorf("%w (and %d more delivery errors)", err, more)
	}
	return err
}
