package tasks

import (
	"fmt"
	"slices"
	"sync"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/statestore"
	"github.com/weirstream/weir/statestore/badgerstore"
)

// State layers. Once Kafka has an epoch (its transaction committed, or
// its outputs acknowledged and offsets committed), every task's staged
// writes of the epoch are frozen into a layer (statestore.Staged.Freeze)
// and the commit returns: the next epoch writes a fresh staging layer on
// top, and reads see it, then the frozen layers newest first, then
// Badger. Interactive queries read the frozen layers over Badger, never
// the staging layer (committedView).
//
// Every layer carries its checkpoints: for each logged store partition it
// writes, the offset after this member's own last changelog record there
// (kafka.AckedOffsets), read the moment Kafka has the epoch — its
// records acknowledged, before any later epoch's are sent — and written
// into Badger in one batch with the layer's rows. Never the changelog's
// end offset: a member stalled (a GC pause, SIGSTOP) right after its
// commit, past its session timeout, would read that end after its
// partition's new owner had restored and written on, and a later restore
// on its state dir would start past the new owner's records and run on
// stale state for good. A
// partition with no record of this member's acknowledged (an epoch a stop
// cut short) keeps its previous checkpoint: a restore then replays more,
// never less.
//
// With ApplyStateBehind (both engines call it), a goroutine of the
// runtime (a Behind) then writes each layer into Badger, in commit order,
// and drops it (statestore.Layer.Changes, badgerstore.DB.Apply,
// Layer.Drop); otherwise the commit does that itself before it returns.
//
// An epoch that commits behind processing (CutBehind in cut.go, then
// CommitBehind in commit_behind.go) freezes its layer pending before its
// commit — the transaction, or the flush and the offset commit — is
// decided: its task reads it, queries
// (committedView) do not; once the epoch committed it is marked
// committed, its checkpoints read and its Badger write queued as for any
// layer. If the epoch aborts or rewinds, the pending layer is
// discarded; it is never in the applier's queue, so nothing waits for it
// but a release (waitApplied, until the commit is decided). An
// at-least-once layer whose offsets were not committed (ErrCommitLater)
// is kept pending instead (stateLayers.kept), its checkpoints read then;
// the next commit decides it before its own layer (takeKept), and a
// task's release drops its stores from it (dropKept) rather than wait for
// that.
//
// An abort drops the staging layer only: frozen layers are committed and
// still reach Badger. A task's release waits for the applier before its
// stores close and its partitions go to the standbys, and a task's
// acquisition waits for it before it restores (restore.go's checkpoint
// read, DropPartition), so no layer is written after its partition was
// handed over or restored afresh. Close waits for it too. The first
// failure is kept: no later layer is written (their changelog records
// stay in Kafka; a restore replays them), the frozen layers stay readable
// and the next commit — or Run's end — returns the error.

// PhaseStateApplyBehind is the applier's write of one layer into Badger,
// with its checkpoints, while processing goes on (ApplyStateBehind);
// the commit's own share — freezing the layers, waiting for the
// applier — is PhaseStateApply.
const PhaseStateApplyBehind = "state_apply_behind"

// pendingLayers is how many committed epochs' layers may wait for the
// applier: a commit past it waits for room (back-pressure, timed in its
// StateApply phase).
const pendingLayers = 2

// stateLayers is the runtime's side of the layers.
type stateLayers struct {
	// behind applies layers behind the commits; nil: the commit does.
	behind *Behind
	// failed is the error of a layer the commit failed to apply (without
	// behind): it is never applied, so no later one may be either.
	failed error
	// beforeApply, if set, runs before a layer's Badger write; its error
	// fails the write (tests).
	beforeApply func() error
	// pending, if not nil, is closed once the commit behind of the epoch
	// cut last is decided and its layer committed (in the applier's
	// queue), discarded or kept: a pending layer is in no queue, so
	// waitApplied waits for it first (commit_behind.go).
	pendingMu sync.Mutex
	pending   chan struct{}
	// kept are the pending layers of at-least-once epochs committed
	// behind whose offset commit failed (ErrCommitLater) or was cut
	// short by a stop, oldest first: still read by their tasks, never by
	// queries, their checkpoints read; the next commit decides them
	// before its own epoch (takeKept). deciding, if not nil, is closed
	// once the commit that took them has decided them. Both are guarded
	// by pendingMu.
	kept     []*epochLayer
	deciding chan struct{}
}

// waitPending waits until the pending layer of the epoch cut last, if
// any, is committed into the applier's queue, discarded or kept, and so
// are the kept layers a commit is deciding.
func (sl *stateLayers) waitPending() {
	sl.pendingMu.Lock()
	ch, deciding := sl.pending, sl.deciding
	sl.pendingMu.Unlock()
	if ch != nil {
		<-ch
	}
	if deciding != nil {
		<-deciding
	}
}

// keep keeps pending layers, oldest first, for the next commit to
// decide; nil ones are skipped. Their checkpoints are read.
func (sl *stateLayers) keep(ls ...*epochLayer) {
	sl.pendingMu.Lock()
	defer sl.pendingMu.Unlock()
	for _, l := range ls {
		if l != nil {
			sl.kept = append(sl.kept, l)
		}
	}
}

// keptChangelog reports whether a kept layer holds changelog records not
// sent yet: a later epoch's must not be sent before them.
func (sl *stateLayers) keptChangelog() bool {
	sl.pendingMu.Lock()
	defer sl.pendingMu.Unlock()
	return heldChangelog(sl.kept) > 0
}

// discardKept discards the kept layers: their epochs rewind.
func (sl *stateLayers) discardKept() {
	kept, decided := sl.takeKept()
	defer decided()
	for _, l := range kept {
		l.discard()
	}
}

// dropKept removes the stores of a task being released, their
// checkpoints and their changelog records not sent yet, from the kept
// layers, once the epoch cut last is decided (its layer may be kept) and
// no commit is deciding kept layers: a later commit must never write them
// to Badger or to the changelog, the task's partition being another
// member's by then, perhaps (see Commit). The task is out of the
// registry: no later cut freezes its state.
func (sl *stateLayers) dropKept(t *Task) {
	sl.pendingMu.Lock()
	defer sl.pendingMu.Unlock()
	for ch := sl.undecided(); ch != nil; ch = sl.undecided() {
		sl.pendingMu.Unlock()
		<-ch
		sl.pendingMu.Lock()
	}
	kept := sl.kept[:0]
	for _, l := range sl.kept {
		l.stores = slices.DeleteFunc(l.stores, func(fs frozenStore) bool {
			if fs.task != t {
				return false
			}
			delete(l.checkpoints, badgerstore.StorePartition{Store: fs.spec.Name, Partition: fs.partition})
			return true
		})
		l.changelog = slices.DeleteFunc(l.changelog, func(tr taskRecord) bool { return tr.task == t })
		if len(l.stores) > 0 || len(l.changelog) > 0 {
			kept = append(kept, l)
		}
	}
	clear(sl.kept[len(kept):])
	sl.kept = kept
}

// undecided returns the channel of a decision in progress — the commit of
// the epoch cut last, or of kept layers — if any. The caller holds
// pendingMu.
func (sl *stateLayers) undecided() chan struct{} {
	for _, ch := range []chan struct{}{sl.pending, sl.deciding} {
		if ch == nil {
			continue
		}
		select {
		case <-ch:
		default:
			return ch
		}
	}
	return nil
}

// epochLayer is one commit's layers: a layer of every store the tasks
// wrote in the epoch, and the checkpoints job 1 reads for them.
type epochLayer struct {
	stores []frozenStore
	// changelog are the changelog records of an at-least-once epoch cut
	// behind not sent yet, in order: its commit behind sends them once
	// every output sent before is acknowledged (sendChangelogs), and a
	// commit that decides the layer after one that failed or was stopped
	// sends them first. nil once sent.
	changelog []taskRecord
	// checkpoints are read once (checkpoint), when Kafka has the epoch:
	// nil until then.
	checkpoints map[badgerstore.StorePartition]badgerstore.Position
}

// taskRecord is a changelog record of a task, held until sent.
type taskRecord struct {
	task *Task // for dropKept
	rec  kafka.Record
}

// frozenStore is the layer of one store of one task.
type frozenStore struct {
	layer     *statestore.Layer
	spec      statestore.Spec
	partition int32
	writer    int32 // the task's writer generation, for the checkpoint
	task      *Task // for dropKept
}

// ApplyStateBehind makes commits return once the epoch's state writes are
// frozen, leaving their Badger write to a goroutine of the runtime (see
// above). Call it before Prepare.
func (r *Runtime) ApplyStateBehind() {
	r.layers.behind = NewBehind(pendingLayers)
}

// waitApplied waits until every layer frozen so far is in Badger (or the
// applier failed), a pending one once its commit is decided: a task
// released while the epoch it last wrote in commits behind — its claim
// ended after the cut — does not close its stores before that epoch's
// layer is in Badger, nor does a new task restore before it.
func (r *Runtime) waitApplied() {
	r.layers.waitPending()
	if r.layers.behind != nil {
		_ = r.layers.behind.Wait()
	}
}

// joinApplier waits for the applier's goroutine to end (Close).
func (r *Runtime) joinApplier() {
	if r.layers.behind != nil {
		_ = r.layers.behind.Join()
	}
}

// applyCommitted freezes the epoch's state writes, after its Kafka
// commit, and applies them to Badger: now, or behind (ApplyStateBehind).
func (r *Runtime) applyCommitted() error {
	l, err := r.freezeStaged(false)
	if err != nil || l == nil {
		return err
	}
	return r.applyFrozen(l)
}

// applyFrozen reads the checkpoints of a committed layer, unless they
// were when it was kept, and applies it to Badger: now, or behind
// (ApplyStateBehind).
func (r *Runtime) applyFrozen(l *epochLayer) error {
	r.checkpoint(l)
	if r.layers.behind == nil {
		err := r.applyLayer(l)
		r.layers.failed = err
		return err
	}
	r.layers.behind.Add(func() error {
		return r.Timed(PhaseStateApplyBehind, nil, func() error { return r.applyLayer(l) })
	})
	return nil
}

// applyKept commits the kept layers, oldest first, and applies them, once
// the offsets of a later epoch are committed (see Commit).
func (r *Runtime) applyKept(kept []*epochLayer) error {
	for _, l := range kept {
		l.commit()
		if err := r.applyFrozen(l); err != nil {
			return err
		}
	}
	return nil
}

// commitLayers commits the layers of an epoch committed behind and
// applies them: the kept ones, oldest first, then the epoch's own (nil if
// it wrote no state), which is marked committed — read by queries from
// then on — even if a kept one failed to apply (that failure stops the
// engine; no later layer is applied).
func (r *Runtime) commitLayers(kept []*epochLayer, l *epochLayer) error {
	err := r.applyKept(kept)
	l.commit()
	if err != nil || l == nil {
		return err
	}
	return r.applyFrozen(l)
}

// commit marks a pending layer committed: queries read it from then on.
func (l *epochLayer) commit() {
	if l == nil {
		return
	}
	for _, fs := range l.stores {
		fs.layer.Commit()
	}
}

// discard drops a pending layer whose transaction aborted.
func (l *epochLayer) discard() {
	if l == nil {
		return
	}
	for _, fs := range l.stores {
		fs.layer.Discard()
	}
}

// checkpoint reads the layer's checkpoints, once: for each logged store
// partition it writes, the offset after this member's last changelog
// record there that Kafka acknowledged (see above). Called once Kafka has
// the epoch, before any later epoch's changelog records are sent.
func (r *Runtime) checkpoint(l *epochLayer) {
	if l.checkpoints != nil {
		return
	}
	l.checkpoints = map[badgerstore.StorePartition]badgerstore.Position{}
	acked := r.ackedOffsets()
	for _, fs := range l.stores {
		if !fs.spec.Logged {
			continue
		}
		topic := processor.ChangelogTopic(fs.spec.Name).Resolve(r.cfg.ApplicationID)
		if next, ok := acked.Next(topic, fs.partition); ok {
			sp := badgerstore.StorePartition{Store: fs.spec.Name, Partition: fs.partition}
			l.checkpoints[sp] = badgerstore.Position{Offset: next, Writer: fs.writer}
		}
	}
}

// acked reads the offsets the transaction's producers had acknowledged.
func (t *txnOutput) acked() *kafka.AckedOffsets { return t.sess.Acked() }

// acked reads the producer's acknowledged offsets.
func (a *atLeastOnce) acked() *kafka.AckedOffsets { return a.producer.Acked() }

// ackedOffsets are the offsets of the changelog records Kafka
// acknowledged to this member: the transaction's producers', or the
// at-least-once producer's.
func (r *Runtime) ackedOffsets() *kafka.AckedOffsets {
	return r.committer.acked()
}

// applyLayer writes the layer's changes into Badger in one batch with its
// checkpoints, then drops it from the overlays' reads.
func (r *Runtime) applyLayer(l *epochLayer) error {
	if r.layers.beforeApply != nil {
		if err := r.layers.beforeApply(); err != nil {
			return fmt.Errorf("runtime: apply committed state: %w", err)
		}
	}
	var changes []badgerstore.Change
	for _, fs := range l.stores {
		cs, err := fs.layer.Changes()
		if err != nil {
			return fmt.Errorf("runtime: apply committed state: %w", err)
		}
		for _, c := range cs {
			changes = append(changes, badgerstore.Change{Store: fs.spec.Name, Partition: fs.partition, Kind: fs.spec.Kind, Key: c.Key, Value: c.Value})
		}
	}
	if err := r.db.Apply(changes, l.checkpoints); err != nil {
		return fmt.Errorf("runtime: apply committed state: %w", err)
	}
	for _, fs := range l.stores {
		fs.layer.Drop()
	}
	return nil
}

// committedView returns reader — a Badger reader of a store partition —
// with the frozen layers of the store of the task that runs the partition
// here over it: the committed state, never the epoch in progress.
func (r *Runtime) committedView(id processor.TaskID, store string, reader statestore.Store) (statestore.Store, error) {
	r.tasks.mu.Lock()
	t := r.tasks.m[id]
	r.tasks.mu.Unlock()
	if t == nil {
		return reader, nil
	}
	select {
	case <-t.ready:
	default:
		return reader, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, st := range t.staged {
		if st.spec.Name == store {
			v, err := st.Committed(reader)
			if err != nil {
				_ = reader.Close()
				return nil, fmt.Errorf("runtime: %w", err)
			}
			return v, nil
		}
	}
	return reader, nil
}
