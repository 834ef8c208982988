package tasks

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/txn"
)

// fenceTimeout bounds one fence: past it the broker's own transaction
// timeout has aborted the transaction anyway.
const fenceTimeout = 30 * time.Second

// fencer fences the transactional ids of the members that left the group
// (docs/guarantees.md, "A dead instance's transaction"). Under
// exactly-once every member advertises its transactional id and learns, at
// each assignment, those of the generation's members
// (kafka.Departures); the survivor kafka.Departed picks initializes a
// producer with each id that left (txn.Fence): the coordinator aborts the
// transaction the dead member left open at once, rather than at its
// transaction timeout and the broker's next abort check, so the last
// stable offsets of its outputs and changelogs move before the survivors
// restore and read them. A member that was expelled but lives (stalled)
// is fenced the same way: its next transactional request fails with
// txn.ErrFenced, its session re-initializes its producer and it rewinds
// to the committed offsets.
//
// The fence runs in the background: the rebalance does not wait for it.
// Under at-least-once (no transactional id) it does nothing.
type fencer struct {
	self string
	cfg  txn.Config // the Session's, but for the id
	log  *slog.Logger

	mu   sync.Mutex
	prev []string // the ids of the last generation assigned; nil: none yet
	stop context.CancelFunc
	ctx  context.Context
	wg   sync.WaitGroup
}

// departures returns the group's kafka.Departures for this runtime: none
// without a transactional id.
func (r *Runtime) departures() kafka.Departures {
	if r.cfg.TransactionalID == "" {
		return kafka.Departures{}
	}
	f := &r.fencer
	f.mu.Lock()
	if f.ctx == nil {
		f.self, f.log = r.cfg.TransactionalID, r.log
		f.cfg = txn.Config{Kafka: r.cfg.Kafka, SessionTimeout: r.cfg.SessionTimeout, Logger: r.log}
		f.ctx, f.stop = context.WithCancel(context.Background())
	}
	f.mu.Unlock()
	return kafka.Departures{TransactionalID: r.cfg.TransactionalID, OnMembers: f.members}
}

// members is kafka.Departures.OnMembers: it starts a fence of each id
// this member is to fence (kafka.Departed).
func (f *fencer) members(cur []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	gone := kafka.Departed(f.prev, cur, f.self)
	f.prev = slices.Clone(cur)
	if f.ctx.Err() != nil {
		return
	}
	for _, id := range gone {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.fence(id)
		}()
	}
}

// fence fences id, bounded by fenceTimeout and the runtime's Close.
func (f *fencer) fence(id string) {
	ctx, cancel := context.WithTimeout(f.ctx, fenceTimeout)
	defer cancel()
	cfg := f.cfg
	cfg.TransactionalID = id
	start := time.Now()
	if err := txn.Fence(ctx, cfg); err != nil {
		// The broker aborts the transaction at its timeout instead.
		f.log.Warn("weir: fencing the transactional id of a member that left the group failed", "transactional_id", id, "err", err)
		return
	}
	f.log.Info("weir: fenced the transactional id of a member that left the group", "transactional_id", id,
		"took", time.Since(start).Round(time.Millisecond))
}

// close stops the fences under way and waits for them.
func (f *fencer) close() {
	f.mu.Lock()
	if f.stop != nil {
		f.stop()
	}
	f.mu.Unlock()
	f.wg.Wait()
}
