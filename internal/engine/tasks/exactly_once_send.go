package tasks

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/txn"
)

// The exactly-once send path (step 3 of the package doc's walk):
// txnOutput.Send puts a task's record into the open transaction, or holds
// it for the next one. The held sends' other parts are where the walk
// reaches them: the cut starts the holding (heldSends.hold, cut.go), the
// release after the commit ends it (heldSends.release, held_release.go),
// and a failed transaction dooms and drops them (heldSends.fail and clear,
// exactly_once.go).
//
// Held sends. While an epoch's transaction commits behind processing
// (CutBehind, CommitBehind), the producer cannot add to the next one: Kafka
// refuses a record of the next transaction before EndTxn returns. The
// tasks go on processing the next epoch meanwhile, and their outputs wait
// here, in the order they were sent; once the next transaction has begun
// the commit sends them, in order, while Sends wait, and only then do
// Sends go to the transaction again, so that no record overtakes one held
// before it.
//
// The records held are bounded (heldRecords, heldBytes): a Send past the
// bound waits for the commit to send them. It waits holding the engine's
// barrier shared, so the commit never needs the barrier to make room, and
// a commit that fails wakes it: the records held, and every Send until the
// engine has rewound, are epoch n+1's, which a rewind drops (the Send
// returns the failure, wrapping ErrRewind). A held record that fails when
// finally sent dooms the open transaction the same way: the Sends after
// it, and the next commit, fail and rewind — it is never dropped silently.

// The bounds of the held records: a Send past either waits.
const (
	heldRecords = 100_000
	heldBytes   = 64 << 20
)

// heldSends are the records held while a transaction commits behind.
type heldSends struct {
	maxRecords, maxBytes int
	mu                   sync.Mutex
	cond                 *sync.Cond
	// on is set from the cut of an epoch until its commit has sent every
	// record held (or failed).
	on    bool
	recs  []kafka.Record
	bytes int
	// err, once set, is what every Send returns until the engine rewinds
	// (clear): the open transaction cannot commit.
	err error
}

// newHeldSends returns heldSends bounded by maxRecords and maxBytes.
func newHeldSends(maxRecords, maxBytes int) *heldSends {
	h := &heldSends{maxRecords: maxRecords, maxBytes: maxBytes}
	h.cond = sync.NewCond(&h.mu)
	return h
}

// add holds r if Sends are held (held true), waiting for room past the
// bounds, or returns the error that doomed the transaction.
func (h *heldSends) add(ctx context.Context, r kafka.Record) (held bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err == nil && h.on && h.full() {
		stop := context.AfterFunc(ctx, func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.cond.Broadcast()
		})
		defer stop()
		for h.err == nil && h.on && h.full() && ctx.Err() == nil {
			h.cond.Wait()
		}
	}
	switch {
	case h.err != nil:
		return true, h.err
	case !h.on:
		return false, nil
	case ctx.Err() != nil:
		return true, ctx.Err()
	}
	h.recs = append(h.recs, r)
	h.bytes += recordSize(r)
	return true, nil
}

// drop forgets the records held, keeping their array for the next
// commit's: a saturated runtime holds thousands of records per commit,
// and growing a fresh slice to that size every epoch cost 13 % of an
// exactly-once stateless application's CPU (copies, zeroing, the
// collector scanning the discarded arrays). The array is at most
// heldRecords long. The caller holds mu.
func (h *heldSends) drop() {
	clear(h.recs) // the records' bytes are not kept alive by the array
	h.recs, h.bytes = h.recs[:0], 0
}

// full reports held records at a bound. The caller holds mu.
func (h *heldSends) full() bool {
	return len(h.recs) >= h.maxRecords || h.bytes >= h.maxBytes
}

// recordSize is what a record counts towards heldBytes.
func recordSize(r kafka.Record) int {
	n := len(r.Key) + len(r.Value) + len(r.Topic)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}

// Send adds r to the open transaction, or, while a transaction commits
// behind processing, holds it for the next one (heldSends.add). An error that
// dooms the transaction wraps ErrRewind: the engine rewinds instead of
// stopping.
func (t *txnOutput) Send(ctx context.Context, r kafka.Record) error {
	if held, err := t.held.add(ctx, r); held || err != nil {
		return err
	}
	return t.send(ctx, r)
}

// send is Send without the holding.
func (t *txnOutput) send(ctx context.Context, r kafka.Record) error {
	err := t.sess.Send(ctx, r)
	if err == nil {
		t.sent.Add(1)
		return nil
	}
	if rewindable(err) || errors.Is(err, txn.ErrNoTransaction) {
		return fmt.Errorf("%w: %w", ErrRewind, err)
	}
	if Stopped(ctx, err) {
		return fmt.Errorf("runtime: send: %w", err)
	}
	if fatal := t.rt.explainOutput(ctx, err); fatal != nil {
		err = fatal
	}
	// The transaction cannot commit: the epoch ends the application.
	t.fatal = t.rt.failing(fmt.Errorf("runtime: send: %w", err))
	return t.fatal
}
