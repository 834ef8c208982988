package statestore

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Layers. An engine that applies committed state to its base behind
// processing — after the epoch's commit, while the next epoch runs —
// freezes the staging layer once the epoch committed (Freeze): its writes
// become a frozen layer, read beneath a fresh staging layer, until the
// engine has written them to the base and drops the layer. Reads see the
// staging layer, then the frozen layers newest first, then the base; a
// Reset (an abort) drops the staging layer only, since the frozen ones are
// committed. Committed returns what an interactive query reads: the frozen
// layers over a base, never the staging layer.
//
// An engine that commits an epoch while the next one runs (the continuous
// engine: the transaction, or the flush and the offset commit, run behind
// processing) freezes the epoch's layer before its commit is decided
// (FreezePending): the overlay reads it — the task's own writes — but a
// committed view does not, until the engine marks it committed
// (Layer.Commit) once the epoch has committed, or discards it
// (Layer.Discard) when it aborted. Pending layers are always the newest:
// they may stack (an epoch whose commit is deferred stays pending under
// the next), but freeze no committed layer over one, and commit them
// oldest first.

// errReadOnly is the error of a write to a view (see Committed).
var errReadOnly = errors.New("statestore: a committed view is read-only")

// layer is a frozen layer: the staged writes of a committed epoch and its
// staged ExpireBefore, never modified once frozen.
type layer struct {
	idx    indexed
	cutoff int64 // noCutoff if none
	puts   int   // staged puts (the rest of idx are deletes)
	// pending is set while the layer's commit is undecided (see
	// FreezePending); guarded by the stack's mu.
	pending bool
}

// frozenStack holds an overlay's frozen layers, oldest first. Its views
// (Committed) share it. Readers hold mu shared while they read the layers
// and the base, and Drop takes it exclusively, so a read sees a layer
// either still frozen or already in the base (the engine writes the base
// before it drops the layer).
type frozenStack struct {
	mu     sync.RWMutex
	layers []*layer
}

// Layer is a frozen layer of a staging overlay (see Staged.Freeze): the
// writes of an epoch that committed, read beneath the newer layers until
// the engine has applied Changes to the base and called Drop. Apply an
// overlay's layers in the order they were frozen.
type Layer struct {
	l       *layer
	stack   *frozenStack
	changes func(l *layer) ([]Change, error)
}

// Changes returns the layer's writes as Staged.Changes returns the
// staging layer's: each key once, and after a staged ExpireBefore a delete
// for every base entry it hides that the layer does not write, listed from
// the base as it is now — so apply the earlier layers first.
func (l *Layer) Changes() ([]Change, error) { return l.changes(l.l) }

// Drop removes the layer from the overlay's reads, once its changes are in
// the base. Dropping twice, or after the overlay closed, does nothing.
func (l *Layer) Drop() {
	l.stack.mu.Lock()
	defer l.stack.mu.Unlock()
	l.stack.layers = slices.DeleteFunc(l.stack.layers, func(x *layer) bool { return x == l.l })
}

// Commit marks a pending layer (FreezePending) committed, once its epoch
// committed: committed views read it from then on, and it is applied and
// dropped as Freeze's layers are. On a committed layer it does nothing.
func (l *Layer) Commit() {
	l.stack.mu.Lock()
	defer l.stack.mu.Unlock()
	l.l.pending = false
}

// Discard removes a pending layer from the overlay's reads, when its
// epoch aborted: its writes never reach the base. A committed layer is
// not discarded (its writes are committed; apply it, then Drop), nor is a
// layer discarded twice or after the overlay closed.
func (l *Layer) Discard() {
	l.stack.mu.Lock()
	defer l.stack.mu.Unlock()
	l.stack.layers = slices.DeleteFunc(l.stack.layers, func(x *layer) bool { return x == l.l && x.pending })
}

// Pending reports whether the layer's commit is still undecided.
func (l *Layer) Pending() bool {
	l.stack.mu.RLock()
	defer l.stack.mu.RUnlock()
	return l.l.pending
}

// Freeze ends the staging layer: its writes, and its staged ExpireBefore,
// become a frozen layer that reads see beneath a new, empty staging layer,
// until Drop. It returns nil, and changes nothing, if nothing is staged.
// Staged bytes count the staging layer only.
func (s *staging[B]) Freeze() *Layer { return s.freeze(false) }

// FreezePending is Freeze for an epoch whose commit is not decided yet:
// the layer is pending — the overlay reads it, committed views do not —
// until Layer.Commit or Layer.Discard.
func (s *staging[B]) FreezePending() *Layer { return s.freeze(true) }

func (s *staging[B]) freeze(pending bool) *Layer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() || s.view || (s.idx.tree.Len() == 0 && s.cutoff == noCutoff) {
		return nil
	}
	l := &layer{idx: s.idx, cutoff: s.cutoff, puts: s.puts, pending: pending}
	s.frozen.mu.Lock()
	s.frozen.layers = append(s.frozen.layers, l)
	s.frozen.mu.Unlock()
	s.reset()
	return &Layer{l: l, stack: s.frozen, changes: func(l *layer) ([]Change, error) { return s.changesOf(&l.idx, l.cutoff) }}
}

// Frozen returns how many frozen layers the overlay holds.
func (s *staging[B]) Frozen() int {
	s.frozen.mu.RLock()
	defer s.frozen.mu.RUnlock()
	return len(s.frozen.layers)
}

// readable returns the frozen layers a read of s sees, oldest first: all
// of them, or for a committed view those no longer pending (pending layers
// are the newest). The caller holds rlock.
func (s *staging[B]) readable() []*layer {
	ls := s.frozen.layers
	if !s.view {
		return ls
	}
	n := len(ls)
	for n > 0 && ls[n-1].pending {
		n--
	}
	return ls[:n]
}

// viewOf sets v up as a read-only view of base (a store of the overlay's
// kind) with the overlay's frozen layers over it, never its staging layer.
func (s *staging[B]) viewOf(v *staging[B], base Store) error {
	b, ok := base.(B)
	if !ok {
		return fmt.Errorf("statestore: committed view of %s store %q: base %T is not a %s store", s.k.layout.kind, s.Name(), base, s.k.layout.kind)
	}
	v.k, v.base, v.frozen, v.view, v.budget = s.k, b, s.frozen, true, s.budget
	v.reset()
	return nil
}

// rlock takes the overlay's read locks — its own, then its frozen
// layers' — and returns their unlock.
func (s *staging[B]) rlock() func() {
	s.mu.RLock()
	s.frozen.mu.RLock()
	return func() {
		s.frozen.mu.RUnlock()
		s.mu.RUnlock()
	}
}

// hidden returns the cutoff below which the base's entries are hidden:
// the latest staged ExpireBefore of every layer. The caller holds rlock.
func (s *staging[B]) hidden() int64 {
	c := s.cutoff
	for _, l := range s.readable() {
		c = max(c, l.cutoff)
	}
	return c
}

// hiddenFrom is hidden as a time, for the base's range reads: from it on,
// or from t if later.
func (s *staging[B]) hiddenFrom(t time.Time) time.Time { return maxMilli(t, s.hidden()) }

// lookupFrozen answers a point read from the frozen layers, newest first,
// after the staging layer had no answer: see lookup. The caller holds
// rlock.
func (s *staging[B]) lookupFrozen(e entry) (value []byte, ok, fromBase bool) {
	layers := s.readable()
	for i := len(layers) - 1; i >= 0; i-- {
		l := layers[i]
		if it, found := l.idx.get(e); found {
			if it.del {
				return nil, false, false
			}
			return bytes.Clone(it.value), true, false
		}
		if l.cutoff != noCutoff && s.k.layout.expiresAt(e) < l.cutoff {
			return nil, false, false
		}
	}
	return nil, false, true
}

// sources sets m's layer sources, newest first, over snapshots of the
// staging layer and of every frozen layer, positioned by seek when
// non-nil; step is the read's range (see treeSource). A frozen layer's
// entries that a newer layer's ExpireBefore hides are skipped. The caller
// holds rlock.
func (s *staging[B]) sources(m *mergedIter, seek *entry, step func(cur *btreeCursor[entry], item entry) (skip, stop bool)) {
	layers := s.readable()
	m.overs = make([]overSource, 0, 1+len(layers))
	next, closeFn := treeSource(&s.idx, seek, step)
	m.overs = append(m.overs, overSource{next: next, close: closeFn})
	hide := s.cutoff
	for i := len(layers) - 1; i >= 0; i-- {
		l := layers[i]
		h := hide
		filtered := step
		if h != noCutoff {
			filtered = func(cur *btreeCursor[entry], item entry) (skip, stop bool) {
				if skip, stop = step(cur, item); skip || stop {
					return skip, stop
				}
				return s.k.layout.expiresAt(item) < h, false
			}
		}
		next, closeFn := treeSource(&l.idx, seek, filtered)
		m.overs = append(m.overs, overSource{next: next, close: closeFn})
		hide = max(hide, l.cutoff)
	}
}

// frozenEntries returns how many puts and deletes the frozen layers
// stage. The caller holds rlock.
func (s *staging[B]) frozenEntries() (puts, dels int) {
	for _, l := range s.readable() {
		puts += l.puts
		dels += l.idx.tree.Len() - l.puts
	}
	return puts, dels
}

// committedView returns a new S that is a read-only view of base with the
// frozen layers of s over it (Staged.Committed), or the error of viewOf.
// It serves every typed wrapper's Committed.
func committedView[S any, B Store, PS interface {
	*S
	Store
	overlay() *staging[B]
}](s *staging[B], base Store) (Store, error) {
	v := PS(new(S))
	if err := s.viewOf(v.overlay(), base); err != nil {
		return nil, err
	}
	return v, nil
}

// overlay returns s itself: through embedding, a typed wrapper's staging
// overlay, for committedView.
func (s *staging[B]) overlay() *staging[B] { return s }
