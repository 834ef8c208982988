package tasks

import (
	"context"
	"time"

	"github.com/weirstream/weir/internal/kafka"
)

// The release of the records held during an exactly-once commit behind
// (step 8 of the package doc's walk): once the epoch's transaction
// committed, the next began and the epoch's layer is queued for Badger,
// the commit behind sends the claims' records held meanwhile (heldSends,
// exactly_once_send.go) into the new transaction, in order.
//
// It comes after the layer is queued, not right after the commit: the
// queue is bounded (pendingLayers), so a commit may wait there for
// Badger, and the exactly-once claims have no bound on how far they run
// ahead of the commit but the held records (EpochCut.HoldsSends). Released
// first, the claims would send on unbounded, into the transaction, while
// the commit waits for the applier.

// PhaseHeldRelease is the sending of the records held during an
// exactly-once commit behind into the next transaction: the tasks' Sends
// wait meanwhile (exactly_once_send.go), though the barrier is not held.
const PhaseHeldRelease = "held_release"

// behindCommitted sends the records held during the commit into the new
// transaction, markersPause after the commit (PhaseHeldRelease). One
// that fails does not fail the epoch that committed: it dooms the next
// (startCut, at the next cut or Commit).
func (t *txnOutput) behindCommitted(ctx context.Context) {
	err := t.rt.Timed(PhaseHeldRelease, nil, func() error {
		if d := markersPause(t.held.count()); d > 0 {
			_ = kafka.Pause(ctx, d) // a stop cuts it short; the release goes on as before
		}
		return t.release(ctx)
	})
	if err != nil {
		t.rt.log.Warn("weir: an output held during the commit failed; the next epoch rewinds", "err", err)
	}
}

// behindCommitted has nothing to release: at-least-once holds nothing.
func (a *atLeastOnce) behindCommitted(context.Context) {}

// release sends the records held while the previous transaction
// committed into the open one, in order, then lets Sends go to it again
// (heldSends.release). The first that fails dooms the transaction: the
// Sends after it and the next commit return its error.
func (t *txnOutput) release(ctx context.Context) error {
	return t.held.release(func(r kafka.Record) error { return t.send(ctx, r) })
}

// release sends the records held, in order, with send, then ends the
// holding: Sends go to the transaction again. It holds mu throughout, so
// Sends wait meanwhile — none overtakes a held record — and it ends once
// the records held when it began are sent, however fast the tasks go on.
// The first send that fails dooms the transaction (as fail); its error is
// returned, as is the doom of a transaction already failed.
func (h *heldSends) release(send func(kafka.Record) error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	defer h.cond.Broadcast()
	defer h.drop()
	if h.err != nil {
		return h.err
	}
	for _, r := range h.recs {
		if err := send(r); err != nil {
			h.err = err
			return err
		}
	}
	h.on = false
	return nil
}

// markersWait is how long a commit behind waits, once its transaction
// committed and the next began, before it sends the records held into the
// next one. The coordinator writes the committed transaction's markers
// after EndTxn returns, and a produce of the next transaction that reaches
// it meanwhile is refused with CONCURRENT_TRANSACTIONS: the broker retries
// it itself only after add.partitions.to.txn.retry.backoff.ms (20 ms by
// default), then the client after a metadata refresh. On Kafka 4.4 with
// 10 ms epochs, where transactions run back to back, a commit took 17–20
// ms without the wait and 8 ms with it (bench: weir-cont-eos-10ms). The
// records stay held meanwhile, as during the commit; the tasks go on.
// Only a commit that held few records waits (markersPause).
const markersWait = 3 * time.Millisecond

// markersWaitMaxHeld is the most records held during a commit for which
// the release still waits out the committed transaction's markers
// (markersPause). At 5,000 records a second and commits of 5–10 ms a
// runtime holds tens of records; saturated, at hundreds of thousands a
// second, thousands.
const markersWaitMaxHeld = 500

// markersPause is how long a commit behind waits, once committed, before
// it sends the held records into the next transaction: markersWait while
// few were held (a latency-bound epoch, where a produce refused with
// CONCURRENT_TRANSACTIONS costs the broker's 20 ms retry, twice the
// epoch), none past markersWaitMaxHeld (a saturated epoch, where the
// retry is spread over a large transaction and the tasks go on meanwhile,
// but a fixed wait lengthens every short epoch: 11–24 % of the stateless
// throughput at 10 ms epochs on Kafka 4.4).
func markersPause(held int) time.Duration {
	if held > markersWaitMaxHeld {
		return 0
	}
	return markersWait
}

// count is the number of records held.
func (h *heldSends) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.recs)
}
