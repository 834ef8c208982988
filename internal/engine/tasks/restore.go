package tasks

import (
	"context"

	"github.com/weirstream/weir/statestore/badgerstore"
)

// A catch-up (catchUp) reads its changelog partition and writes what it
// read into Badger at the same time: the records go into batches of
// restoreBatch records or restoreBatchBytes bytes, whichever comes first,
// and an applier writes each batch, with the checkpoint just past its last
// record, in one Badger Apply on a goroutine of its own while the reader
// fetches and decodes the next (and kafka.Admin.ReadRange has the fetch
// after that on its way). The invariants a restore relies on hold batch by
// batch:
//
//  1. The batches are applied one at a time, in changelog order, each
//     with its checkpoint: in the same Apply, or — a catch-up from an
//     empty partition — by ApplyFresh after the batch's rows; a
//     checkpoint is never ahead of its rows (badgerstore.DB.Apply,
//     badgerstore.DB.ApplyFresh).
//  2. A catch-up that stops — its context ended, a fetch failed, an Apply
//     failed — leaves the batches applied so far, and the checkpoint of
//     the last of them; the batch being filled is dropped, a batch queued
//     is applied (or, after a failed Apply, dropped). The next catch-up
//     reads on from that checkpoint, so the store ends up as if the first
//     had not stopped.
//  3. catchUp returns only after the applier has stopped: nothing writes
//     to the store partition once it has returned.

// Restore batches: an Apply of restoreBatch records of 100-byte values
// takes about half a megabyte, well inside a Badger transaction
// (badgerstore.DefaultMemTableSize); restoreBatchBytes bounds a batch of
// larger values before its Apply has to split (a split is still exact,
// only slower).
const (
	restoreBatch      = 4096
	restoreBatchBytes = 1 << 20
)

// restoreBatchOf is one batch for the applier: its changes and the
// checkpoint they bring the store partition to.
type restoreBatchOf struct {
	changes []badgerstore.Change
	to      badgerstore.Position
}

// applier applies a catch-up's batches in order on its own goroutine.
type applier struct {
	db *badgerstore.DB
	sp badgerstore.StorePartition
	// fresh: the catch-up began from an empty partition (no checkpoint,
	// the partition dropped), so its batches go through
	// badgerstore.DB.ApplyFresh, which is exact only while every row of
	// the partition is one this catch-up wrote (see there): a catch-up
	// from a checkpoint — a standby's, a restart's — applies on top of
	// rows others wrote, with Apply.
	fresh   bool
	applied func(n int)  // after each Apply: how many changes it wrote
	before  func() error // if not nil, before each Apply; its error fails it

	queue chan restoreBatchOf
	spare chan []badgerstore.Change // emptied batches, for the reader to fill again
	done  chan struct{}             // closed when the goroutine ends; err is set then
	err   error
}

// startApplier starts the applier of one catch-up of sp.
func startApplier(db *badgerstore.DB, sp badgerstore.StorePartition, fresh bool, before func() error, applied func(n int)) *applier {
	a := &applier{
		db: db, sp: sp, fresh: fresh, before: before, applied: applied,
		// One batch queued while one is applied: the reader runs at most
		// two batches ahead of Badger.
		queue: make(chan restoreBatchOf, 1),
		spare: make(chan []badgerstore.Change, 2),
		done:  make(chan struct{}),
	}
	go a.run()
	return a
}

func (a *applier) run() {
	defer close(a.done)
	for b := range a.queue {
		if a.err == nil && a.before != nil {
			a.err = a.before()
		}
		if a.err == nil { // after a failure, drain the queue without writing
			if a.fresh {
				a.err = a.db.ApplyFresh(b.changes, a.sp, b.to)
			} else {
				a.err = a.db.Apply(b.changes, map[badgerstore.StorePartition]badgerstore.Position{a.sp: b.to})
			}
			if a.err == nil {
				a.applied(len(b.changes))
			}
		}
		clear(b.changes) // drop the references to the fetched records
		select {
		case a.spare <- b.changes[:0]:
		default:
		}
	}
}

// submit queues changes, up to the checkpoint to, waiting while the
// applier is two batches behind. It returns the applier's error if an
// Apply failed, and ctx's if it ends first.
func (a *applier) submit(ctx context.Context, changes []badgerstore.Change, to badgerstore.Position) error {
	select {
	case <-a.done:
		return a.err
	default:
	}
	select {
	case a.queue <- restoreBatchOf{changes: changes, to: to}:
		return nil
	case <-a.done:
		return a.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// batch returns an empty slice to fill: one the applier is done with, or
// a new one.
func (a *applier) batch() []badgerstore.Change {
	select {
	case b := <-a.spare:
		return b
	default:
		return make([]badgerstore.Change, 0, restoreBatch)
	}
}

// stop waits until the queued batches are applied (all of them, or up to
// the first that failed) and returns the first Apply error.
func (a *applier) stop() error {
	close(a.queue)
	<-a.done
	return a.err
}
